//! The storage an Icechunk repository lives in, built by icechunk's own
//! constructors (its `Storage` is sealed) from the settings zarrow opens the
//! same URL with: the environment's (`AWS_*`, `GOOGLE_*`, `AZURE_*`) and the
//! URL options.

use std::sync::Arc;

use icechunk::Storage;
use icechunk::config::Credentials;

use super::{Authorized, ic_error};
use crate::error::{Error, LocationError, Result};
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
use crate::location::Cloud;
use crate::location::{IcechunkLocation, Repository, UrlOptions};

/// Open the storage of `location`'s repository.
#[cfg_attr(
    not(any(feature = "s3", feature = "gcs", feature = "azure")),
    allow(unreachable_code, unused_variables)
)]
pub(super) async fn open(
    location: &IcechunkLocation,
    options: &UrlOptions,
) -> Result<Arc<dyn Storage + Send + Sync>> {
    let url = match location.repository() {
        Repository::Path(path) => {
            return icechunk::new_local_filesystem_storage(path)
                .await
                .map_err(|e| ic_error(location, e));
        }
        Repository::Url(url) => url,
    };
    let (_, prefix) = url.split_root();
    let prefix = (!prefix.is_empty()).then_some(prefix);
    #[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
    let bucket = url.url().host_str().unwrap_or_default().to_string();
    let opened: icechunk::storage::StorageResult<Arc<dyn Storage + Send + Sync>> = match url.cloud()
    {
        #[cfg(feature = "s3")]
        Cloud::S3 => {
            use icechunk::config::{S3Credentials, S3Options};
            use object_store::ClientConfigKey;
            use object_store::aws::AmazonS3ConfigKey as Key;
            // The settings an `s3://` URL opens with, read back from the
            // builder that reads them (the environment, then the options).
            let builder = crate::location::s3_builder(&bucket, options);
            let value = |key| builder.get_config_value(&key);
            let on = |key| value(key).is_some_and(|v| v.eq_ignore_ascii_case("true"));
            let anonymous = on(Key::SkipSignature);
            let mut config = S3Options::default()
                .with_allow_http(on(Key::Client(ClientConfigKey::AllowHttp)))
                .with_anonymous(anonymous);
            if let Some(region) = value(Key::Region) {
                config = config.with_region(region);
            }
            if let Some(endpoint) = value(Key::Endpoint) {
                config = config.with_endpoint_url(endpoint);
            }
            // Not anonymous: the credentials come from the environment.
            let credentials = anonymous.then_some(S3Credentials::Anonymous);
            icechunk::new_s3_object_store_storage(
                config,
                bucket,
                prefix,
                credentials,
                Vec::new(),
                Vec::new(),
            )
            .await
        }
        #[cfg(feature = "gcs")]
        Cloud::Gcs => {
            use icechunk::config::GcsCredentials;
            let credentials = options.anonymous.then_some(GcsCredentials::Anonymous);
            icechunk::storage::new_gcs_storage(
                bucket,
                prefix,
                credentials,
                None,
                Vec::new(),
                Vec::new(),
            )
        }
        #[cfg(feature = "azure")]
        Cloud::Azure => {
            use icechunk::config::AzureCredentials;
            use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
            let builder = MicrosoftAzureBuilder::from_env().with_url(url.as_str());
            let emulator = builder
                .get_config_value(&AzureConfigKey::UseEmulator)
                .is_some_and(|v| v.eq_ignore_ascii_case("true"));
            // object_store names the emulator's well-known account when it
            // builds its client; icechunk's builder needs it given.
            let account = builder
                .get_config_value(&AzureConfigKey::AccountName)
                .filter(|a| !a.is_empty())
                .unwrap_or_else(|| {
                    if emulator {
                        "devstoreaccount1".into()
                    } else {
                        String::new()
                    }
                });
            let container = builder
                .get_config_value(&AzureConfigKey::ContainerName)
                .unwrap_or(bucket);
            let credentials = options.anonymous.then_some(AzureCredentials::Anonymous);
            icechunk::storage::new_azure_blob_storage(account, container, prefix, credentials, None)
                .await
        }
        #[allow(unreachable_patterns)]
        other => {
            return Err(Error::Location {
                location: location.to_string(),
                reason: LocationError::NotBuilt {
                    scheme: format!("icechunk+{}", url.url().scheme()),
                    feature: other.feature(),
                },
            });
        }
    };
    opened.map_err(|e| ic_error(location, e))
}

/// The credentials of each virtual chunk container `options` authorizes:
/// none for a local directory or HTTP, the environment's for a cloud (none
/// with `anonymous`).
pub(super) fn virtual_chunk_credentials(
    location: &IcechunkLocation,
    options: &UrlOptions,
) -> Result<Authorized> {
    let mut authorized = Authorized::new();
    for prefix in &options.virtual_chunks {
        let scheme = prefix
            .split_once("://")
            .map(|(s, _)| s.to_ascii_lowercase());
        let credentials = match scheme.as_deref() {
            Some("file") => Credentials::LocalFileSystemAccess,
            Some("http" | "https") => Credentials::HttpAccess,
            Some("s3" | "s3a") => {
                use icechunk::config::S3Credentials;
                Credentials::S3(if options.anonymous {
                    S3Credentials::Anonymous
                } else {
                    S3Credentials::FromEnv
                })
            }
            #[cfg(feature = "gcs")]
            Some("gs" | "gcs") => {
                use icechunk::config::GcsCredentials;
                Credentials::Gcs(if options.anonymous {
                    GcsCredentials::Anonymous
                } else {
                    GcsCredentials::FromEnv
                })
            }
            #[cfg(feature = "azure")]
            Some("az" | "azure" | "abfs") => {
                use icechunk::config::AzureCredentials;
                Credentials::Azure(if options.anonymous {
                    AzureCredentials::Anonymous
                } else {
                    AzureCredentials::FromEnv
                })
            }
            _ => {
                return Err(Error::Location {
                    location: location.to_string(),
                    reason: LocationError::InvalidQuery {
                        detail: format!(
                            "virtual_chunks {prefix:?} is no container URL prefix this build reads (file://, http(s)://, s3://, and gs:// or az:// with their features)"
                        ),
                    },
                });
            }
        };
        authorized.insert(prefix.clone(), Some(credentials));
    }
    Ok(authorized)
}
