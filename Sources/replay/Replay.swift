import ArgumentParser

/// `replay`: rebuild, verify, audit, show, export, import, back up and sync a reading-history store.
///
/// One file per command in `Commands/` (the nested `sync` and `partner` commands in their own
/// folders); what commands share is in `Support/`: the option groups (`StoreOptions`,
/// `RangeOptions`, `TodayOptions`, `ServerOptions`), typed arguments (`Arguments.swift`), the
/// `--json` printer, the progress line and the worker process.
@main
struct Replay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Rebuild, verify, audit, show, export, import, back up and sync a reading-history store.",
        discussion: """
            Every command that works on a store takes --store PATH. Without it, the store is $READING_STORE, or \
            ./reading-store when that is not set. Exit status: 0 success, 64 usage error, 1 failure.
            """,
        version: "0.1.0",
        subcommands: [Demo.self, Rebuild.self, Verify.self, Audit.self, Show.self, Export.self, Import.self, ImportFrom.self,
                      Backup.self, Stats.self, Report.self, Sync.self, Partner.self]
    )
}
