import ArgumentParser
import EventStoreLMDB
import Foundation
import ReadingSync

/// `--server` and `--token`, the options of the commands that talk to the sync server.
struct ServerOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The sync server's URL (http://127.0.0.1:8080).", valueName: "url"), transform: ServerURL.parse)
    var server: ServerURL?
    @Option(help: "This device's token (default: $READING_SYNC_TOKEN; `replay sync register` prints one).")
    var token: String?
    @Option(name: .customLong("max-outage"),
            help: ArgumentHelp("Seconds to wait out a server that does not answer or answers 503/429 (following its Retry-After) before giving up (default 300).",
                               valueName: "seconds"),
            transform: OutageSeconds.parse)
    var maxOutage = OutageSeconds(seconds: 300)

    /// A client for `store` (`--server` is given: the commands check it in `validate()`).
    func client(store: ReadingStore) throws -> SyncClient {
        guard let server else { throw ValidationError("--server is required") }
        let token = try resolvedToken()
        return try talkingToServer { try SyncClient(store: store, server: server.url, token: token, retry: RetryPolicy(maxOutage: maxOutage.duration)) }
    }

    /// `--token`, else `$READING_SYNC_TOKEN`; throws when neither is given.
    func resolvedToken() throws -> String {
        guard let token = token ?? ProcessInfo.processInfo.environment["READING_SYNC_TOKEN"], !token.isEmpty else {
            throw ReplayError("no token: pass --token or set READING_SYNC_TOKEN (`replay sync register` prints one)")
        }
        return token
    }
}

/// `--max-outage SECONDS`: how long a command waits out a server outage (0 ... 86400 seconds;
/// `ReadingSync`'s default, 300).
struct OutageSeconds: CheckedArgument, CustomStringConvertible {
    let seconds: Double

    var duration: Duration { .milliseconds(Int64(seconds * 1000)) }

    static func parse(_ text: String) throws -> OutageSeconds {
        guard let seconds = Double(text), seconds.isFinite, (0...86_400).contains(seconds) else {
            throw ValidationError("not a number of seconds in 0 ... 86400")
        }
        return OutageSeconds(seconds: seconds)
    }

    var description: String { seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds) }
}

/// The store and the server of a command that works on the server for this store's reader
/// (`partner …`): `--server` is required.
struct ServerConnection: ParsableArguments {
    @OptionGroup var store: StoreOptions
    @OptionGroup var server: ServerOptions

    func validate() throws {
        guard server.server != nil else { throw ValidationError("--server is required") }
    }

    /// A client for the store at `--store`.
    func client() throws -> SyncClient { try server.client(store: try store.openExisting()) }
}

/// Runs `body`, which talks to the server; a ``SyncError`` becomes one line (exit 1).
func talkingToServer<T>(_ body: () throws -> T) throws -> T {
    do { return try body() } catch let error as SyncError { throw ReplayError("\(error)") }
}

/// Runs `body`, which talks to the server; a ``SyncError`` becomes one line (exit 1).
func talkingToServer<T>(_ body: () async throws -> T) async throws -> T {
    do { return try await body() } catch let error as SyncError { throw ReplayError("\(error)") }
}
