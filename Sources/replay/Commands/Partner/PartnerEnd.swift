import ArgumentParser
import ReadingEvents

extension Replay.Partner {
    /// `replay partner end READER`: end a partnership.
    struct End: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "End the partnership with a reader; neither sees the other's events afterwards.")

        @OptionGroup var connection: ServerConnection
        @Argument(help: ArgumentHelp("The partner's reader ID (a UUID).", valueName: "reader"), transform: ReaderID.parse)
        var partner: ReaderID

        func run() async throws {
            let client = try connection.client()
            try await talkingToServer { try await client.endPartnership(with: partner) }
            print("ended")
        }
    }
}
