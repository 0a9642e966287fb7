import ArgumentParser
import Foundation
import ReadingEvents
import ReadingSync

extension Replay.Sync {
    /// `replay sync register`: a device of a reader on the sync server.
    struct Register: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register this device of a reader with the sync server; prints its token.",
            discussion: "The first device of a reader registers without a token; further devices pass an existing device's --token.")

        @Option(help: ArgumentHelp("The sync server's URL.", valueName: "url"), transform: ServerURL.parse) var server: ServerURL
        @Option(help: "The reader (the UUID the store uses).", transform: ReaderID.parse) var reader: ReaderID
        @Option(help: "A name for this device (1 ... 300 UTF-8 bytes, no control characters).") var name: String
        @Option(help: "An existing device's token, to add another device of the same reader.") var token: String?
        @Option(name: .customLong("max-outage"),
                help: ArgumentHelp("Seconds to wait out a server that does not answer or answers 503/429 before giving up (default 300).",
                                   valueName: "seconds"),
                transform: OutageSeconds.parse)
        var maxOutage = OutageSeconds(seconds: 300)

        func run() async throws {
            let registration = try await talkingToServer {
                try await SyncClient.register(server: server.url, reader: reader, deviceName: name, token: token,
                                              retry: RetryPolicy(maxOutage: maxOutage.duration))
            }
            print("device \(registration.device)")
            print("token \(registration.token)")
        }
    }
}
