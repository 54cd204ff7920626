//! Run fuzz inputs through their target outside libFuzzer and group them by panic
//! message (first line), to sort a pile of crash artifacts:
//!
//! ```sh
//! cargo run --release --manifest-path fuzz/Cargo.toml --example triage -- NAME FILE...
//! ```

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

thread_local! {
    static LOCATION: RefCell<String> = const { RefCell::new(String::new()) };
}

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().expect("usage: triage NAME FILE...");
    let target = zarrow_fuzz::TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
        .expect("no target of that name");
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()));
        LOCATION.with(|l| *l.borrow_mut() = at.unwrap_or_default());
    }));
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in args {
        let data = std::fs::read(&file).expect("read an input");
        LOCATION.with(|l| l.borrow_mut().clear());
        let message = match catch_unwind(AssertUnwindSafe(|| target(&data))) {
            Ok(()) => "no panic".to_string(),
            Err(panic) => panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default(),
        };
        let first: String = message
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(160)
            .collect();
        let at = LOCATION.with(|l| l.borrow().clone());
        let first = if at.is_empty() {
            first
        } else {
            format!("{first} [at {at}]")
        };
        groups.entry(first).or_default().push(file);
    }
    for (message, files) in &groups {
        let smallest = files
            .iter()
            .min_by_key(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(u64::MAX))
            .cloned()
            .unwrap_or_default();
        println!(
            "{} inputs: {message}\n    smallest: {smallest}",
            files.len()
        );
    }
}
