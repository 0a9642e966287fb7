import ArgumentParser

extension Replay {
    /// `replay sync …`: exchange events with another store or the sync server, and what goes with it.
    struct Sync: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Exchange events with another local store or the sync server; the quarantine, the version vector, device registration.",
            discussion: """
                Without a subcommand, `run`: `replay sync --with DIR` and `replay sync --server URL` exchange both ways.
                """,
            subcommands: [Run.self, Vector.self, Quarantine.self, RetryQuarantine.self, Register.self],
            defaultSubcommand: Run.self)
    }
}
