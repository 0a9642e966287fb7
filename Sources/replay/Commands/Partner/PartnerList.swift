import ArgumentParser

extension Replay.Partner {
    /// `replay partner list`: this reader's partners.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List this reader's partners, one reader ID a line.")

        @OptionGroup var connection: ServerConnection

        func run() async throws {
            let client = try connection.client()
            for partner in try await talkingToServer({ try await client.partners() }) { print("partner \(partner)") }
        }
    }
}
