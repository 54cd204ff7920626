//! Writes zarrow golden stores with zarrs 0.23.14 itself, reads each back with zarrs and
//! dumps the read-back values to JSON for `testdata/gen/zarrs_expected.py`.
//!
//! Usage: `zarrow-gen-zarrs STORES_DIR DUMPS_DIR`
//!
//! Every store is deleted and rewritten (idempotent). Codec lists are given below as the
//! JSON a user would write; they are parsed by zarrs (`CodecChain::from_metadata`) and the
//! array is built with `ArrayBuilder`, so the `zarr.json` on disk is zarrs' own
//! serialisation of those codecs (for `zarrs.vlen` always the 0.1 configuration form).
//! The one draft 0.0 case is written that way and then edited to the 0.0 form, and zarrs
//! must read the edited store back to the same values.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use serde_json::{Value, json};
use zarrs::array::{
    Array, ArrayBuilder, ArrayBytes, ArrayBytesOffsets, CodecChain, FillValueMetadata,
};
use zarrs::filesystem::FilesystemStore;
use zarrs::group::GroupBuilder;
use zarrs::metadata::v3::MetadataV3;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Element values of one array, C order over the whole array.
#[derive(Clone)]
enum Values {
    /// UTF-8 strings (`string` data type).
    Str(Vec<String>),
    /// Raw bytes (`bytes` data type).
    Bin(Vec<Vec<u8>>),
    /// int32 (fixed size, `bytes` codec).
    I32(Vec<i32>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::Str(v) => v.len(),
            Values::Bin(v) => v.len(),
            Values::I32(v) => v.len(),
        }
    }
}

/// One array to write.
struct Spec {
    data_type: &'static str,
    fill: Value,
    shape: Vec<u64>,
    chunks: Vec<u64>,
    codecs: Value,
    values: Values,
    /// Chunk keys that must be absent after writing (zarrs skips all-fill chunks;
    /// any listed key that zarrs did write is deleted).
    absent: Vec<&'static str>,
}

fn strs(v: &[&str]) -> Values {
    Values::Str(v.iter().map(|s| (*s).to_string()).collect())
}

fn bins(v: &[&[u8]]) -> Values {
    Values::Bin(v.iter().map(|s| s.to_vec()).collect())
}

fn vlen(
    index_data_type: &str,
    index_location: &str,
    index_codecs: Value,
    data_codecs: Value,
) -> Value {
    json!({"name": "zarrs.vlen", "configuration": {
        "data_codecs": data_codecs,
        "index_codecs": index_codecs,
        "index_data_type": index_data_type,
        "index_location": index_location,
    }})
}

fn plain_vlen(index_data_type: &str, index_location: &str) -> Value {
    vlen(
        index_data_type,
        index_location,
        json!([{"name": "bytes", "configuration": {"endian": "little"}}]),
        json!([{"name": "bytes"}]),
    )
}

const STR10: [&str; 10] = [
    "alpha",
    "",
    "ünïcödé",
    "日本語",
    "🦀 crab",
    "a\u{0}b",
    "the",
    "quick brown fox",
    "end",
    "",
];

fn write_array(store: &Arc<FilesystemStore>, root: &Path, path: &str, spec: &Spec) -> Res<()> {
    let metas: Vec<MetadataV3> = serde_json::from_value(spec.codecs.clone())?;
    let chain = CodecChain::from_metadata(&metas)?;
    let fill: FillValueMetadata = serde_json::from_value(spec.fill.clone())?;
    let array = ArrayBuilder::new(
        spec.shape.clone(),
        spec.chunks.clone(),
        spec.data_type,
        fill,
    )
    .array_to_array_codecs(chain.array_to_array_codecs().to_vec())
    .array_to_bytes_codec(chain.array_to_bytes_codec().clone())
    .bytes_to_bytes_codecs(chain.bytes_to_bytes_codecs().to_vec())
    .build(store.clone(), path)?;
    array.store_metadata()?;
    let n: u64 = spec.shape.iter().product();
    assert_eq!(n as usize, spec.values.len(), "{path}: value count");
    let subset = array.subset_all();
    match &spec.values {
        Values::Str(v) => {
            let bytes: Vec<&[u8]> = v.iter().map(|s| s.as_bytes()).collect();
            array.store_array_subset(&subset, vlen_bytes(&bytes)?)?;
        }
        Values::Bin(v) => {
            let bytes: Vec<&[u8]> = v.iter().map(Vec::as_slice).collect();
            array.store_array_subset(&subset, vlen_bytes(&bytes)?)?;
        }
        Values::I32(v) => {
            array.store_array_subset(&subset, v.as_slice())?;
        }
    }
    let dir = root.join(path.trim_start_matches('/'));
    for key in &spec.absent {
        let p = dir.join(key);
        if p.exists() {
            std::fs::remove_file(&p)?;
        }
        assert!(!p.exists());
    }
    Ok(())
}

fn vlen_bytes(values: &[&[u8]]) -> Res<ArrayBytes<'static>> {
    let mut data = Vec::new();
    let mut offsets = vec![0usize];
    for v in values {
        data.extend_from_slice(v);
        offsets.push(data.len());
    }
    Ok(ArrayBytes::new_vlen(
        data,
        ArrayBytesOffsets::new(offsets)?,
    )?)
}

/// Read an array back with zarrs and describe it for the python step.
fn dump_array(store: &Arc<FilesystemStore>, root: &Path, path: &str) -> Res<Value> {
    let array = Array::open(store.clone(), path)?;
    let subset = array.subset_all();
    let data_type = array.data_type().clone();
    let values: Vec<Value> = if data_type.is_fixed() {
        let v: Vec<i32> = array.retrieve_array_subset::<Vec<i32>>(&subset)?;
        v.into_iter().map(Value::from).collect()
    } else {
        let bytes: ArrayBytes = array.retrieve_array_subset(&subset)?;
        let (data, offsets) = bytes.into_variable()?.into_parts();
        offsets
            .windows(2)
            .map(|w| Value::from(BASE64_STANDARD.encode(&data[w[0]..w[1]])))
            .collect()
    };
    let dir = root.join(path.trim_start_matches('/'));
    let meta: Value = serde_json::from_slice(&std::fs::read(dir.join("zarr.json"))?)?;
    let mut chunk_keys: Vec<String> = walk(&dir)?
        .into_iter()
        .filter_map(|p| {
            let rel = p.strip_prefix(&dir).ok()?.to_string_lossy().into_owned();
            rel.starts_with("c/").then_some(rel)
        })
        .collect();
    chunk_keys.sort();
    Ok(json!({
        "shape": array.shape(),
        "data_type": meta["data_type"],
        "values_b64": if data_type.is_fixed() { Value::Null } else { Value::from(values.clone()) },
        "values_int": if data_type.is_fixed() { Value::from(values) } else { Value::Null },
        "chunk_keys": chunk_keys,
        "metadata": meta,
    }))
}

fn walk(dir: &Path) -> Res<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let p = entry?.path();
        if p.is_dir() {
            out.extend(walk(&p)?);
        } else {
            out.push(p);
        }
    }
    Ok(out)
}

/// Check that zarrs read back exactly the values written. Chunks left absent are all
/// fill in the written values, so the written values are the expected values.
fn check_values(dump: &Value, spec: &Spec) {
    let decode = |b: &Value| BASE64_STANDARD.decode(b.as_str().unwrap()).unwrap();
    match &spec.values {
        Values::Str(want) => {
            let got: Vec<String> = dump["values_b64"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| String::from_utf8(decode(b)).unwrap())
                .collect();
            assert_eq!(&got, want);
        }
        Values::Bin(want) => {
            let got: Vec<Vec<u8>> = dump["values_b64"]
                .as_array()
                .unwrap()
                .iter()
                .map(decode)
                .collect();
            assert_eq!(&got, want);
        }
        Values::I32(want) => {
            let got: Vec<i32> = dump["values_int"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| i32::try_from(x.as_i64().unwrap()).unwrap())
                .collect();
            assert_eq!(&got, want);
        }
    }
}

struct Case {
    name: &'static str,
    notes: &'static str,
    /// The array (path "") or, for a group, its children.
    arrays: Vec<(&'static str, Spec)>,
    group: bool,
    /// Edit the written `zarr.json` (of the array at `arrays[0]`) before reading back.
    edit: Option<fn(&mut Value)>,
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();

    for (name, idt, loc, notes) in [
        (
            "zarrs_vlen_u64_start",
            "uint64",
            "start",
            "zarrs.vlen index_data_type uint64, index_location start, plain bytes index/data codecs, no outer codec: the Arrow LargeUtf8 layout after an 8-byte header; length 10, chunk 4, edge chunk padded with ''.",
        ),
        (
            "zarrs_vlen_u32_start",
            "uint32",
            "start",
            "zarrs.vlen uint32 offsets, index at start, no compression; length 10, chunk 4.",
        ),
        (
            "zarrs_vlen_u64_end",
            "uint64",
            "end",
            "zarrs.vlen uint64 offsets, index_location end (data | index | u64 index length); length 10, chunk 4.",
        ),
        (
            "zarrs_vlen_u32_end",
            "uint32",
            "end",
            "zarrs.vlen uint32 offsets, index_location end; length 10, chunk 4.",
        ),
    ] {
        out.push(Case {
            name,
            notes,
            arrays: vec![(
                "",
                Spec {
                    data_type: "string",
                    fill: json!(""),
                    shape: vec![10],
                    chunks: vec![4],
                    codecs: json!([plain_vlen(idt, loc)]),
                    values: strs(&STR10),
                    absent: vec![],
                },
            )],
            group: false,
            edit: None,
        });
    }

    out.push(Case {
        name: "zarrs_vlen_nested",
        notes: "zarrs.vlen uint32, index_location end, data_codecs [bytes, zstd level 3], index_codecs [bytes little, crc32c], outer bytes->bytes codecs [zstd level 1, crc32c]; length 10, chunk 4.",
        arrays: vec![(
            "",
            Spec {
                data_type: "string",
                fill: json!(""),
                shape: vec![10],
                chunks: vec![4],
                codecs: json!([
                    vlen(
                        "uint32",
                        "end",
                        json!([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]),
                        json!([{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 3, "checksum": false}}])
                    ),
                    {"name": "zstd", "configuration": {"level": 1, "checksum": false}},
                    {"name": "crc32c"}
                ]),
                values: strs(&STR10),
                absent: vec![],
            },
        )],
        group: false,
        edit: None,
    });

    out.push(Case {
        name: "zarrs_vlen_index_zstd",
        notes: "zarrs.vlen uint64, index_location start, index_codecs [bytes little, zstd level 5, crc32c], data_codecs [bytes, crc32c], no outer codec; length 10, chunk 4.",
        arrays: vec![(
            "",
            Spec {
                data_type: "string",
                fill: json!(""),
                shape: vec![10],
                chunks: vec![4],
                codecs: json!([vlen(
                    "uint64",
                    "start",
                    json!([{"name": "bytes", "configuration": {"endian": "little"}},
                           {"name": "zstd", "configuration": {"level": 5, "checksum": false}},
                           {"name": "crc32c"}]),
                    json!([{"name": "bytes"}, {"name": "crc32c"}])
                )]),
                values: strs(&STR10),
                absent: vec![],
            },
        )],
        group: false,
        edit: None,
    });

    // 14 elements, chunk 4: c/0 mixed, c/1 all "" (written: not the fill; its data section is
    // empty so the data codecs are not run), c/2 all "NA" (= fill: zarrs does not write it),
    // c/3 edge (2 values + 2 of padding).
    out.push(Case {
        name: "zarrs_vlen_missing",
        notes: "zarrs.vlen uint64 start, data_codecs [bytes, zstd]; fill_value 'NA'; length 14, chunk 4: c/1 is all '' (empty data section, zstd not run on it), c/2 is all fill so zarrs does not write it (absent -> 'NA'), c/3 is the edge chunk padded with 'NA'.",
        arrays: vec![(
            "",
            Spec {
                data_type: "string",
                fill: json!("NA"),
                shape: vec![14],
                chunks: vec![4],
                codecs: json!([vlen(
                    "uint64",
                    "start",
                    json!([{"name": "bytes", "configuration": {"endian": "little"}}]),
                    json!([{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 3, "checksum": false}}])
                )]),
                values: strs(&["x", "", "ÿ", "NA", "", "", "", "", "NA", "NA", "NA", "NA", "tail", "日"]),
                absent: vec!["c/2"],
            },
        )],
        group: false,
        edit: None,
    });

    out.push(Case {
        name: "zarrs_vlen_2d",
        notes: "zarrs.vlen uint32 start, string 2-D shape (5,3) chunks (2,2), outer zstd; edge chunks in both dimensions; expected = C-order flattening.",
        arrays: vec![(
            "",
            Spec {
                data_type: "string",
                fill: json!(""),
                shape: vec![5, 3],
                chunks: vec![2, 2],
                codecs: json!([plain_vlen("uint32", "start"), {"name": "zstd", "configuration": {"level": 3, "checksum": false}}]),
                values: Values::Str((0..15).map(|i| if i == 4 { String::new() } else { format!("r{}c{}{}", i / 3, i % 3, "é".repeat(i % 4)) }).collect()),
                absent: vec![],
            },
        )],
        group: false,
        edit: None,
    });

    let bin9: [&[u8]; 9] = [
        b"",
        b"abc",
        b"\x00",
        b"\x00a\x00b\x00",
        b"\xff\xfe",
        b"\x80\x81\x82",
        b"plain",
        b"",
        b"\x00\x00",
    ];
    out.push(Case {
        name: "zarrs_vlen_bytes",
        notes: "data_type 'bytes' (zarrs' name) with zarrs.vlen uint64 start; fill_value written by zarrs as an int array ([] for empty bytes); NULs, invalid UTF-8; length 9, chunk 4.",
        arrays: vec![(
            "",
            Spec {
                data_type: "bytes",
                fill: json!([]),
                shape: vec![9],
                chunks: vec![4],
                codecs: json!([plain_vlen("uint64", "start")]),
                values: bins(&bin9),
                absent: vec![],
            },
        )],
        group: false,
        edit: None,
    });

    out.push(Case {
        name: "zarrs_vlen_bytes_fill",
        notes: "data_type 'bytes' with non-empty fill b'NA' (zarrs writes fill_value [78, 65]); zarrs.vlen uint32 end; length 9, chunk 3: chunk c/1 all fill -> not written (absent), edge-free.",
        arrays: vec![(
            "",
            Spec {
                data_type: "bytes",
                fill: json!([78, 65]),
                shape: vec![9],
                chunks: vec![3],
                codecs: json!([plain_vlen("uint32", "end")]),
                values: bins(&[b"\xff", b"", b"NA\x00", b"NA", b"NA", b"NA", b"\x00", b"z", b"NA"]),
                absent: vec!["c/1"],
            },
        )],
        group: false,
        edit: None,
    });

    out.push(Case {
        name: "zarrs_vlen_v2",
        notes: "zarrs.vlen_v2 (same chunk bytes as vlen-utf8, decoupled from the data type) on a string array + outer zstd; length 10, chunk 4.",
        arrays: vec![(
            "",
            Spec {
                data_type: "string",
                fill: json!(""),
                shape: vec![10],
                chunks: vec![4],
                codecs: json!([{"name": "zarrs.vlen_v2"}, {"name": "zstd", "configuration": {"level": 3, "checksum": false}}]),
                values: strs(&STR10),
                absent: vec![],
            },
        )],
        group: false,
        edit: None,
    });

    out.push(Case {
        name: "zarrs_vlen_v2_bytes",
        notes: "zarrs.vlen_v2 on a 'bytes' array, no outer codec; length 9, chunk 4.",
        arrays: vec![(
            "",
            Spec {
                data_type: "bytes",
                fill: json!([]),
                shape: vec![9],
                chunks: vec![4],
                codecs: json!([{"name": "zarrs.vlen_v2"}]),
                values: bins(&bin9),
                absent: vec![],
            },
        )],
        group: false,
        edit: None,
    });

    out.push(Case {
        name: "zarrs_vlen_v0",
        notes: "zarrs.vlen draft 0.0 configuration (no index_location key; means start). zarrs 0.23.14 always writes the 0.1 form, so the store was written by zarrs with index_location start and uint32 offsets, then zarr.json was edited to drop index_location; zarrs reads the edited store back to the same values.",
        arrays: vec![(
            "",
            Spec {
                data_type: "string",
                fill: json!(""),
                shape: vec![10],
                chunks: vec![4],
                codecs: json!([vlen(
                    "uint32",
                    "start",
                    json!([{"name": "bytes", "configuration": {"endian": "little"}}]),
                    json!([{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 3, "checksum": false}}])
                )]),
                values: strs(&STR10),
                absent: vec![],
            },
        )],
        group: false,
        edit: Some(|meta: &mut Value| {
            let codec = &mut meta["codecs"][0];
            assert_eq!(codec["name"], "zarrs.vlen");
            let conf = codec["configuration"].as_object_mut().unwrap();
            assert_eq!(conf.remove("index_location"), Some(json!("start")));
        }),
    });

    out.push(Case {
        name: "zarrs_vlen_utf8",
        notes: "standard vlen-utf8 codec written by zarrs (no outer codec), so chunk bytes can be compared with numcodecs' VLenUTF8 byte for byte; length 10, chunk 4.",
        arrays: vec![(
            "",
            Spec {
                data_type: "string",
                fill: json!(""),
                shape: vec![10],
                chunks: vec![4],
                codecs: json!([{"name": "vlen-utf8"}]),
                values: strs(&STR10),
                absent: vec![],
            },
        )],
        group: false,
        edit: None,
    });

    out.push(Case {
        name: "zarrs_vlen_utf8_zstd",
        notes: "vlen-utf8 + zstd written by zarrs (what zarrs picks by default for string arrays, with zstd added); fill 'NA' and an all-fill chunk zarrs does not write (c/1 absent); length 10, chunk 4.",
        arrays: vec![(
            "",
            Spec {
                data_type: "string",
                fill: json!("NA"),
                shape: vec![10],
                chunks: vec![4],
                codecs: json!([{"name": "vlen-utf8"}, {"name": "zstd", "configuration": {"level": 3, "checksum": false}}]),
                values: strs(&["a", "bb", "", "ü", "NA", "NA", "NA", "NA", "🦀", "z"]),
                absent: vec!["c/1"],
            },
        )],
        group: false,
        edit: None,
    });

    out.push(Case {
        name: "zarrs_vlen_bytes_std",
        notes: "vlen-bytes codec on zarrs' 'bytes' data type (fill_value [] as zarrs writes it); length 9, chunk 4.",
        arrays: vec![(
            "",
            Spec {
                data_type: "bytes",
                fill: json!([]),
                shape: vec![9],
                chunks: vec![4],
                codecs: json!([{"name": "vlen-bytes"}]),
                values: bins(&bin9),
                absent: vec![],
            },
        )],
        group: false,
        edit: None,
    });

    let n = 12usize;
    out.push(Case {
        name: "zarrs_group",
        notes: "v3 group written by zarrs: label (string, zarrs.vlen uint32 start, chunk 5), blob (bytes, zarrs.vlen uint64 end + zstd, chunk 4), code (int32, bytes codec, chunk 7); ignored: grid (2-D string).",
        arrays: vec![
            (
                "label",
                Spec {
                    data_type: "string",
                    fill: json!(""),
                    shape: vec![n as u64],
                    chunks: vec![5],
                    codecs: json!([plain_vlen("uint32", "start")]),
                    values: Values::Str((0..n).map(|i| if i % 5 == 0 { String::new() } else { format!("lab-{i}-ß") }).collect()),
                    absent: vec![],
                },
            ),
            (
                "blob",
                Spec {
                    data_type: "bytes",
                    fill: json!([]),
                    shape: vec![n as u64],
                    chunks: vec![4],
                    codecs: json!([plain_vlen("uint64", "end"), {"name": "zstd", "configuration": {"level": 3, "checksum": false}}]),
                    values: Values::Bin((0..n).map(|i| (0..i as u8).map(|b| b.wrapping_mul(37)).collect()).collect()),
                    absent: vec![],
                },
            ),
            (
                "code",
                Spec {
                    data_type: "int32",
                    fill: json!(0),
                    shape: vec![n as u64],
                    chunks: vec![7],
                    codecs: json!([{"name": "bytes", "configuration": {"endian": "little"}}]),
                    values: Values::I32((0..n as i32).map(|i| i * 1000 - 5000).collect()),
                    absent: vec![],
                },
            ),
            (
                "grid",
                Spec {
                    data_type: "string",
                    fill: json!(""),
                    shape: vec![n as u64, 2],
                    chunks: vec![6, 2],
                    codecs: json!([plain_vlen("uint32", "start")]),
                    values: Values::Str((0..2 * n).map(|i| i.to_string()).collect()),
                    absent: vec![],
                },
            ),
        ],
        group: true,
        edit: None,
    });
    out
}

/// `read STORE`: read every array of a store (the root array, or each child array
/// of a root group) with zarrs and print `{name: {"data_type", "values_b64"}}` as
/// JSON. Fixed-width elements are given as their raw bytes (little-endian), so a
/// checker can compare any type. Used by zarrow's CI to check that zarrs reads
/// zarrow's output.
fn read_store(root: &Path) -> Res<Value> {
    let store = Arc::new(FilesystemStore::new(root)?);
    let meta: Value = serde_json::from_slice(&std::fs::read(root.join("zarr.json"))?)?;
    let mut paths = Vec::new();
    if meta["node_type"] == "array" {
        paths.push(("".to_string(), "/".to_string()));
    } else {
        let mut names: Vec<String> = std::fs::read_dir(root)?
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("zarr.json").is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        paths.extend(names.into_iter().map(|n| (n.clone(), format!("/{n}"))));
    }
    let mut out = serde_json::Map::new();
    for (name, path) in paths {
        let array = Array::open(store.clone(), &path)?;
        let subset = array.subset_all();
        let bytes: ArrayBytes = array.retrieve_array_subset(&subset)?;
        let values: Vec<Value> = match array.data_type().fixed_size() {
            Some(size) => {
                let raw = bytes.into_fixed()?;
                raw.chunks(size.max(1)).map(|e| Value::from(BASE64_STANDARD.encode(e))).collect()
            }
            None => {
                let (data, offsets) = bytes.into_variable()?.into_parts();
                offsets.windows(2).map(|w| Value::from(BASE64_STANDARD.encode(&data[w[0]..w[1]]))).collect()
            }
        };
        let dir_meta: Value = serde_json::from_slice(&std::fs::read(root.join(name.as_str()).join("zarr.json"))?)?;
        out.insert(name, json!({"data_type": dir_meta["data_type"], "values_b64": values}));
    }
    Ok(Value::Object(out))
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "read" {
        println!("{}", read_store(Path::new(&args[2]))?);
        return Ok(());
    }
    if args.len() != 3 {
        eprintln!("usage: {} STORES_DIR DUMPS_DIR", args[0]);
        std::process::exit(2);
    }
    let stores = PathBuf::from(&args[1]);
    let dumps = PathBuf::from(&args[2]);
    std::fs::create_dir_all(&stores)?;
    std::fs::create_dir_all(&dumps)?;

    for case in cases() {
        let root = stores.join(format!("{}.zarr", case.name));
        if root.exists() {
            std::fs::remove_dir_all(&root)?;
        }
        std::fs::create_dir_all(&root)?;
        let store = Arc::new(FilesystemStore::new(&root)?);
        if case.group {
            GroupBuilder::new()
                .build(store.clone(), "/")?
                .store_metadata()?;
        }
        for (child, spec) in &case.arrays {
            let path = if case.group {
                format!("/{child}")
            } else {
                "/".to_string()
            };
            write_array(&store, &root, &path, spec)?;
        }
        if let Some(edit) = case.edit {
            let p = root.join("zarr.json");
            let mut meta: Value = serde_json::from_slice(&std::fs::read(&p)?)?;
            edit(&mut meta);
            std::fs::write(&p, serde_json::to_string_pretty(&meta)? + "\n")?;
        }
        // read back with zarrs (a fresh store handle: nothing cached)
        let store = Arc::new(FilesystemStore::new(&root)?);
        let mut arrays = serde_json::Map::new();
        for (child, spec) in &case.arrays {
            let path = if case.group {
                format!("/{child}")
            } else {
                "/".to_string()
            };
            let dump = dump_array(&store, &root, &path)?;
            check_values(&dump, spec);
            for key in &spec.absent {
                assert!(
                    !dump["chunk_keys"].as_array().unwrap().contains(&json!(key)),
                    "{key} present"
                );
            }
            arrays.insert(child.to_string(), dump);
        }
        let group_meta: Value = if case.group {
            serde_json::from_slice(&std::fs::read(root.join("zarr.json"))?)?
        } else {
            Value::Null
        };
        let out = json!({
            "case": case.name,
            "kind": if case.group { "group" } else { "array" },
            "writer": format!("zarrs {}", zarrs::version::version_str()),
            "notes": case.notes,
            "hand_edited": case.edit.is_some(),
            "group_metadata": group_meta,
            "arrays": arrays,
        });
        std::fs::write(
            dumps.join(format!("{}.json", case.name)),
            serde_json::to_string_pretty(&out)? + "\n",
        )?;
        println!(
            "  {:32} {}",
            case.name,
            if case.group { "group" } else { "array" }
        );
    }
    probe_aliases(&stores, &dumps)?;
    Ok(())
}

/// Which `zarrs.vlen` names does zarrs 0.23.14 accept on read? Copies
/// `zarrs_vlen_u64_start.zarr` to a scratch directory under DUMPS_DIR, renames the codec
/// and tries to read it back. Prints one line per name; writes no store.
fn probe_aliases(stores: &Path, dumps: &Path) -> Res<()> {
    let src = stores.join("zarrs_vlen_u64_start.zarr");
    let want = dump_array(&Arc::new(FilesystemStore::new(&src)?), &src, "/")?["values_b64"].clone();
    for name in [
        "zarrs.vlen",
        "https://codec.zarrs.dev/array_to_bytes/vlen",
        "vlen",
    ] {
        let dst = dumps.join("alias-probe.zarr");
        if dst.exists() {
            std::fs::remove_dir_all(&dst)?;
        }
        std::fs::create_dir_all(dst.join("c"))?;
        for entry in std::fs::read_dir(src.join("c"))? {
            let entry = entry?;
            std::fs::copy(entry.path(), dst.join("c").join(entry.file_name()))?;
        }
        let mut meta: Value = serde_json::from_slice(&std::fs::read(src.join("zarr.json"))?)?;
        meta["codecs"][0]["name"] = json!(name);
        std::fs::write(dst.join("zarr.json"), serde_json::to_vec(&meta)?)?;
        let store = Arc::new(FilesystemStore::new(&dst)?);
        let result = dump_array(&store, &dst, "/").map(|d| d["values_b64"] == want);
        match result {
            Ok(true) => println!("  probe: zarrs reads codec name {name:?}: yes"),
            Ok(false) => println!("  probe: zarrs reads codec name {name:?}: WRONG VALUES"),
            Err(err) => println!("  probe: zarrs reads codec name {name:?}: no ({err})"),
        }
        std::fs::remove_dir_all(&dst)?;
    }
    Ok(())
}
