import ArgumentParser

extension Replay.Partner {
    /// `replay partner accept CODE`: become partners with the reader who made the code.
    struct Accept: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Accept a partner's invite code; prints the partner's reader ID.")

        @OptionGroup var connection: ServerConnection
        @Argument(help: "The code `replay partner invite` printed on the partner's device.") var code: String

        func run() async throws {
            let client = try connection.client()
            print("partner \(try await talkingToServer { try await client.accept(code: code) })")
        }
    }
}
