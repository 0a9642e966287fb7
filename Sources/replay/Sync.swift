import ArgumentParser
import EventStoreLMDB
import Foundation
import ReadingEvents
import ReadingSync

extension Replay {
    struct Sync: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Exchange events with another local store (--with), or with the sync server (--server), both ways.",
            discussion: """
                Each store sends what the other's version vector says it lacks (`changes(since:)`), in \
                canonical order and in batches of --batch events, and the other merges each batch in one \
                all-or-nothing transaction: events it holds are skipped, late ones refold only their books. \
                Prints what moved each way, both version vectors, and whether the views are now equal. \
                The other store is created when its directory does not exist. A second sync moves nothing.

                With --server URL (and --token, or $READING_SYNC_TOKEN, from `replay register`): pushes this \
                reader's events the server has not acknowledged, then pulls and merges what the device lacks \
                (its other devices' events and partners' shared events); safe to interrupt and repeat.
                """)

        @OptionGroup var options: StoreOptions
        @Option(help: "The other store's directory (created when missing).") var with: String?
        @OptionGroup var server: ServerOptions
        @Option(parsing: .unconditional, help: "Events per merge transaction (at least 1).") var batch: Int = 5_000
        @Flag(help: "List the events merges kept aside (each with its reason), and exchange nothing.") var quarantine = false
        @Flag(help: "Merge the quarantine again (events this build now takes leave it), and exchange nothing.") var retryQuarantine = false

        func validate() throws {
            guard batch >= 1 else { throw ValidationError("--batch must be at least 1, not \(batch)") }
            if quarantine || retryQuarantine {
                guard with == nil, server.server == nil, !(quarantine && retryQuarantine) else {
                    throw ValidationError("--quarantine and --retry-quarantine take neither --with nor --server, nor each other")
                }
                return
            }
            guard (with == nil) != (server.server == nil) else { throw ValidationError("name exactly one of --with DIR and --server URL") }
        }

        func run() async throws {
            if quarantine || retryQuarantine {
                let store = try options.openExisting(readOnly: quarantine)
                if retryQuarantine { print("retried: \(try store.retryQuarantine())") }
                let entries = try store.quarantine()
                for entry in entries { print("quarantined \(entry)") }
                print("\(entries.count) event(s) in the quarantine")
                return
            }
            guard let with else {
                let client = try server.client(store: try options.openExisting())
                do {
                    let report = try await client.sync()
                    print("\(server.server ?? ""): \(report)")
                } catch let error as SyncError {
                    throw ReplayError("\(error)")
                }
                return
            }
            let other = URL(fileURLWithPath: with)
            guard options.url.resolvingSymlinksInPath().standardizedFileURL != other.resolvingSymlinksInPath().standardizedFileURL else {
                throw ReplayError("--with names the store itself (\(other.path)); name another store")
            }
            let a = try options.openExisting()
            let b = try ReadingStore.open(at: other)
            guard a.replica != b.replica else {
                // A copy or a restore gets a new replica ID at its first writable open; two stores of
                // one replica ID can only be the same store reached by two paths (a bind mount).
                throw ReplayError("both stores are replica \(a.replica): they are one store reached by two paths (a bind mount or a hard link); sync with another store")
            }
            let sent = try Self.send(from: a, to: b, batch: batch)
            let received = try Self.send(from: b, to: a, batch: batch)
            print("\(options.url.path) -> \(other.path): \(sent)")
            print("\(other.path) -> \(options.url.path): \(received)")
            print("vector \(options.url.path): \(try a.versionVector())")
            print("vector \(other.path): \(try b.versionVector())")
            let (da, db) = (try a.viewDigest(), try b.viewDigest())
            if da == db {
                print("views: equal (digest \(da))")
            } else {
                let kept = try a.quarantine().count + b.quarantine().count
                let cause = kept > 0
                    ? "\(kept) event(s) are in the quarantine of one store and not the other (`replay sync --quarantine` on each lists them)"
                    : "a store holds events without an origin (appended through the raw log), which never leave it"
                throw ReplayError("views differ after the exchange (\(da) and \(db)): \(cause)")
            }
        }

        /// Sends `target` everything `source` holds that its vector lacks, in pages.
        static func send(from source: ReadingStore, to target: ReadingStore, batch: Int) throws -> MergeResult {
            let vector = try target.versionVector()
            var total = MergeResult()
            var after: EventOrigin?
            while true {
                let page = try source.changes(since: vector, after: after, limit: batch)
                guard let last = page.last else { return total }
                total = total + (try target.merge(page))
                after = last.origin
            }
        }
    }

    struct Vector: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the store's replica ID and version vector (the input of `export --since-vector`).")

        @OptionGroup var options: StoreOptions

        func run() throws {
            let store = try options.openExisting(readOnly: true)
            print("replica \(store.replica)")
            print("vector \(try store.versionVector())")
        }
    }
}

/// The options of the commands that talk to the sync server.
struct ServerOptions: ParsableArguments {
    @Option(help: "The sync server's URL (http://127.0.0.1:8080).") var server: String?
    @Option(help: "This device's token (default: $READING_SYNC_TOKEN; `replay register` prints one).") var token: String?

    /// A client for `store`.
    func client(store: ReadingStore) throws -> SyncClient {
        guard let server, let url = URL(string: server), url.scheme == "http" || url.scheme == "https" else {
            throw ReplayError("--server \"\(server ?? "")\" is not an http(s) URL")
        }
        guard let token = token ?? ProcessInfo.processInfo.environment["READING_SYNC_TOKEN"], !token.isEmpty else {
            throw ReplayError("no token: pass --token or set READING_SYNC_TOKEN (`replay register` prints one)")
        }
        do { return try SyncClient(store: store, server: url, token: token) } catch let error as SyncError {
            throw ReplayError("\(error)")
        }
    }
}

extension Replay {
    struct Register: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register this device of a reader with the sync server; prints its token.",
            discussion: "The first device of a reader registers without a token; further devices pass an existing device's --token.")

        @Option(help: "The sync server's URL.") var server: String
        @Option(help: "The reader (the UUID the store uses).") var reader: String
        @Option(help: "A name for this device (1 ... 300 UTF-8 bytes, no control characters).") var name: String
        @Option(help: "An existing device's token, to add another device of the same reader.") var token: String?

        func validate() throws {
            guard ReaderID(uuidString: reader) != nil else { throw ValidationError("--reader \"\(reader)\" is not a UUID") }
            guard URL(string: server)?.scheme.map({ $0 == "http" || $0 == "https" }) == true else {
                throw ValidationError("--server \"\(server)\" is not an http(s) URL")
            }
        }

        func run() async throws {
            do {
                let registration = try await SyncClient.register(server: URL(string: server)!, reader: ReaderID(uuidString: reader)!,
                                                                 deviceName: name, token: token)
                print("device \(registration.device)")
                print("token \(registration.token)")
            } catch let error as SyncError {
                throw ReplayError("\(error)")
            }
        }
    }

    struct Partner: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Reading partners on the sync server: invite (prints a single-use code), accept CODE, end READER, list.")

        @OptionGroup var options: StoreOptions
        @OptionGroup var server: ServerOptions
        @Argument(help: "invite, accept, end or list.") var action: String
        @Argument(help: "The code (accept) or the partner's reader UUID (end).") var value: String?

        func validate() throws {
            switch action {
            case "invite", "list": guard value == nil else { throw ValidationError("\(action) takes no value") }
            case "accept": guard value != nil else { throw ValidationError("accept needs the CODE") }
            case "end": guard value.flatMap(ReaderID.init(uuidString:)) != nil else { throw ValidationError("end needs the partner's reader UUID") }
            default: throw ValidationError("the action is invite, accept, end or list, not \"\(action)\"")
            }
            guard server.server != nil else { throw ValidationError("--server is required") }
        }

        func run() async throws {
            let client = try server.client(store: try options.openExisting())
            do {
                switch action {
                case "invite":
                    let invite = try await client.invite()
                    print("code \(invite.code)")
                    print("expires \(invite.expiresAt)")
                case "accept":
                    print("partner \(try await client.accept(code: value!))")
                case "end":
                    try await client.endPartnership(with: ReaderID(uuidString: value!)!)
                    print("ended")
                default:
                    for partner in try await client.partners() { print("partner \(partner)") }
                }
            } catch let error as SyncError {
                throw ReplayError("\(error)")
            }
        }
    }
}
