import ArgumentParser

extension Replay {
    /// `replay partner …`: reading partners on the sync server.
    struct Partner: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Reading partners on the sync server: invite (prints a single-use code), accept CODE, end READER, list.",
            subcommands: [Invite.self, Accept.self, End.self, List.self])
    }
}
