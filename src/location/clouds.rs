//! How a URL becomes a store: the options a URL is opened with
//! ([`UrlOptions`]) and each cloud's `object_store` client, built from the
//! environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`) and those options. The one
//! place zarrow opens a URL; [`Stores`](super::Stores) asks it for a URL no
//! engine has registered a store for.

use std::sync::Arc;

#[cfg(any(feature = "s3", feature = "gcs", feature = "azure", feature = "http"))]
use object_store::ClientConfigKey;
use object_store::ObjectStore;

#[cfg(any(feature = "s3", feature = "gcs", feature = "azure", feature = "http"))]
use super::Cloud;
use super::RemoteUrl;
use crate::error::Error;

/// A URL or configuration `object_store` refuses.
pub(crate) fn remote(
    location: &str,
    source: impl std::error::Error + Send + Sync + 'static,
) -> Error {
    Error::Remote {
        location: location.to_string(),
        source: Box::new(source),
    }
}

crate::options::options! {
    /// How to open a store by URL.
    #[derive(Debug, Clone, PartialEq, Eq)]
    #[non_exhaustive]
    pub struct UrlOptions("url") {
        /// [object stores] Do not sign requests (a public bucket). Credentials, region and
        /// endpoint otherwise come from the environment (AWS_*, GOOGLE_*,
        /// AZURE_*).
        pub anonymous: bool = false,
        /// [object stores] Requests kept in flight while reading (default 32).
        pub concurrency: Option<usize> as crate::options::Unset = None,
        /// [object stores] Retries of a transient failure (HTTP 5xx, a connection reset,
        /// a timeout), with exponential backoff; 403, 404 and other permanent
        /// errors are not retried (default 10).
        pub retries: Option<usize> as crate::options::Unset = None,
        /// [object stores] Stop retrying a request after this many seconds (default 180).
        pub retry_timeout: Option<std::time::Duration> as crate::options::Seconds = None,
        /// [object stores] The most seconds one request may take before it counts as
        /// failed, and is retried (default 30).
        pub timeout: Option<std::time::Duration> as crate::options::Seconds = None,
        /// [Icechunk repositories] Read an Icechunk repository's virtual chunks from these
        /// containers, by URL prefix, comma-separated (e.g.
        /// s3://bucket/data/,file:///data/), with the environment's credentials,
        /// as for object stores. A virtual chunk elsewhere is an error that names
        /// its container.
        pub virtual_chunks: Vec<String> as crate::options::List = Vec::new(),
    }
}

impl UrlOptions {
    #[cfg(any(feature = "s3", feature = "gcs", feature = "azure", feature = "http"))]
    fn retry(&self) -> object_store::RetryConfig {
        let mut retry = object_store::RetryConfig::default();
        if let Some(n) = self.retries {
            retry.max_retries = n;
        }
        if let Some(t) = self.retry_timeout {
            retry.retry_timeout = t;
        }
        retry
    }

    /// The client settings these options make, as configuration pairs laid
    /// over those a builder read from the environment (`*_ALLOW_HTTP`,
    /// `*_PROXY_URL`...), which `with_client_options` would replace.
    #[cfg(any(feature = "s3", feature = "gcs", feature = "azure", feature = "http"))]
    fn client_config(&self) -> Vec<(ClientConfigKey, String)> {
        self.timeout
            .map(|t| (ClientConfigKey::Timeout, format!("{}ns", t.as_nanos())))
            .into_iter()
            .collect()
    }
}

/// Whether the endpoint the environment variable `var` names is plain HTTP: a
/// local server (moto, MinIO, Azurite, an emulator) the user named with
/// `http://`, which allows HTTP.
#[cfg(any(feature = "s3", feature = "azure"))]
fn http_endpoint(var: &str) -> bool {
    std::env::var(var).is_ok_and(|e| e.starts_with("http://"))
}

/// An S3 client's settings for `bucket`: the environment's (`AWS_*`, the
/// endpoint in `AWS_ENDPOINT_URL` too, and plain HTTP allowed for an
/// `http://` endpoint), then the URL options. What an `s3://` store opens
/// with, and what an Icechunk repository on S3 is given.
#[cfg(feature = "s3")]
pub(crate) fn s3_builder(bucket: &str, options: &UrlOptions) -> object_store::aws::AmazonS3Builder {
    use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
    let mut builder = AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_retry(options.retry());
    if let Ok(endpoint) = std::env::var("AWS_ENDPOINT_URL") {
        builder = builder.with_endpoint(endpoint);
    }
    if http_endpoint("AWS_ENDPOINT_URL") {
        builder = builder.with_allow_http(true);
    }
    for (key, value) in options.client_config() {
        builder = builder.with_config(AmazonS3ConfigKey::Client(key), value);
    }
    if options.anonymous {
        builder = builder.with_skip_signature(true);
    }
    builder
}

/// The object store `url`'s cloud opens from the environment, and the path
/// under it.
#[cfg_attr(
    not(any(feature = "s3", feature = "gcs", feature = "azure", feature = "http")),
    allow(unused_variables)
)]
pub(crate) fn cloud_store(
    url: &RemoteUrl,
    options: &UrlOptions,
) -> std::result::Result<(Arc<dyn ObjectStore>, String), object_store::Error> {
    #[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
    let (_, prefix) = url.split_root();
    #[cfg(any(feature = "s3", feature = "gcs"))]
    let bucket = url.url().host_str().unwrap_or_default();
    match url.cloud() {
        #[cfg(feature = "s3")]
        Cloud::S3 => Ok((Arc::new(s3_builder(bucket, options).build()?), prefix)),
        #[cfg(feature = "gcs")]
        Cloud::Gcs => {
            use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
            // The endpoint: `GOOGLE_BASE_URL`, or `gcs_base_url` in the service
            // account file (an emulator's, with `"disable_oauth": true`).
            let mut builder = GoogleCloudStorageBuilder::from_env()
                .with_bucket_name(bucket)
                .with_retry(options.retry());
            for (key, value) in options.client_config() {
                builder = builder.with_config(GoogleConfigKey::Client(key), value);
            }
            if options.anonymous {
                builder = builder.with_skip_signature(true);
            }
            Ok((Arc::new(builder.build()?), prefix))
        }
        #[cfg(feature = "azure")]
        Cloud::Azure => {
            use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
            // Azurite: `AZURE_STORAGE_USE_EMULATOR=true` and its URL in
            // `AZURITE_BLOB_STORAGE_URL` (object_store then allows HTTP and
            // uses the emulator's well-known account and key).
            let mut builder = MicrosoftAzureBuilder::from_env()
                .with_url(url.as_str())
                .with_retry(options.retry());
            if http_endpoint("AZURE_STORAGE_ENDPOINT") {
                builder = builder.with_allow_http(true);
            }
            for (key, value) in options.client_config() {
                builder = builder.with_config(AzureConfigKey::Client(key), value);
            }
            if options.anonymous {
                builder = builder.with_skip_signature(true);
            }
            // The container is in the URL (`az://container/...`,
            // `abfs://container@account.dfs.core.windows.net/...`); the rest of
            // the path is the prefix.
            Ok((Arc::new(builder.build()?), prefix))
        }
        #[cfg(feature = "http")]
        Cloud::Http => {
            use object_store::http::HttpBuilder;
            // The whole URL is the store's root: keys are relative to it.
            let mut builder = HttpBuilder::new()
                .with_url(url.as_str())
                .with_config(
                    ClientConfigKey::AllowHttp,
                    (url.url().scheme() == "http").to_string(),
                )
                .with_retry(options.retry());
            for (key, value) in options.client_config() {
                builder = builder.with_config(key, value);
            }
            Ok((Arc::new(builder.build()?), String::new()))
        }
        // `Location::parse` refuses a URL of a cloud this build leaves out.
        #[allow(unreachable_patterns)]
        other => Err(object_store::Error::NotSupported {
            source: format!("zarrow was built without its `{}` feature", other.feature()).into(),
        }),
    }
}
