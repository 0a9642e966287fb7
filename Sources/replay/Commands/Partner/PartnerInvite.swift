import ArgumentParser

extension Replay.Partner {
    /// `replay partner invite`: a single-use code for a partner.
    struct Invite: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Ask the server for a single-use invite code; prints the code and when it expires.")

        @OptionGroup var connection: ServerConnection

        func run() async throws {
            let client = try connection.client()
            let invite = try await talkingToServer { try await client.invite() }
            print("code \(invite.code)")
            print("expires \(invite.expiresAt)")
        }
    }
}
