//! The command line's flags of an option group, made from its one declaration
//! ([`zarrow::options`]): a flag per option, named by its key with `-` for
//! `_`, its help the option's doc. Nothing here lists an option.

use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use zarrow::options::{OptionEntry, OptionKind, Options};

/// The options of group `T` given on the command line: their keys and items,
/// and, parsed once when the flags are, the group they make over its
/// defaults.
#[derive(Debug, Clone)]
pub(crate) struct Flags<T> {
    given: Vec<(&'static str, Vec<String>)>,
    options: T,
}

impl<T: Options> Flags<T> {
    /// Lay the given options over `options` (a front end's own defaults).
    pub(crate) fn apply(&self, options: &mut T) -> zarrow::Result<()> {
        for (key, items) in &self.given {
            options.set_items(key, items)?;
        }
        Ok(())
    }

    /// The given options over the group's defaults.
    pub(crate) fn options(&self) -> &T {
        &self.options
    }
}

/// A name clap keeps for the program's life (made once per flag).
fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

fn arg(entry: &OptionEntry) -> Arg {
    let long = entry.negated_flag.unwrap_or(entry.key).replace('_', "-");
    // A negated flag turns its option off: its help says which.
    let off = |help: String| match entry.negated_flag {
        Some(_) => format!("Sets {} to false. {help}", entry.key),
        None => help,
    };
    let paragraphs = entry.paragraphs();
    let summary = paragraphs.first().cloned().unwrap_or_default();
    let arg = Arg::new(entry.key)
        .long(leak(long))
        .help(leak(off(summary)))
        .long_help(leak(off(paragraphs.join("\n\n"))))
        .conflicts_with_all(entry.conflicts);
    match (entry.kind, entry.negated_flag) {
        (OptionKind::Flag, Some(_)) => arg.action(ArgAction::SetTrue),
        // `--flag` or `--flag=false`.
        (OptionKind::Flag, None) => arg
            .action(ArgAction::Set)
            .num_args(0..=1)
            .require_equals(true)
            .default_missing_value("true")
            .value_name("BOOL"),
        (OptionKind::List, _) => arg
            .action(ArgAction::Set)
            .value_delimiter(',')
            .value_name(leak(entry.key.to_ascii_uppercase())),
        _ => arg
            .action(ArgAction::Set)
            .value_name(leak(entry.key.to_ascii_uppercase())),
    }
}

impl<T: Options> Args for Flags<T> {
    fn augment_args(cmd: Command) -> Command {
        T::entries()
            .iter()
            .fold(cmd, |cmd, entry| cmd.arg(arg(entry)))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl<T: Options> FromArgMatches for Flags<T> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut given = Vec::new();
        for entry in T::entries() {
            if matches.value_source(entry.key) != Some(ValueSource::CommandLine) {
                continue;
            }
            let items = if entry.negated_flag.is_some() {
                vec!["false".to_string()]
            } else {
                matches
                    .get_many::<String>(entry.key)
                    .into_iter()
                    .flatten()
                    .cloned()
                    .collect()
            };
            given.push((entry.key, items));
        }
        let mut options = T::default();
        for (key, items) in &given {
            // A bad value is refused as clap refuses its own, before any work.
            options
                .set_items(key, items)
                .map_err(|e| clap::Error::raw(ErrorKind::ValueValidation, format!("{e}\n")))?;
        }
        Ok(Self { given, options })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}
