import ArgumentParser
import EventStoreLMDB
import Foundation
import ReadingEvents

extension Replay.Sync {
    /// `replay sync run`: both ways, with another local store or with the sync server.
    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Exchange events with another local store (--with), or with the sync server (--server), both ways.",
            discussion: """
                Each store sends what the other's version vector says it lacks (`changes(since:)`), in \
                canonical order and in batches of --batch events, and the other merges each batch in one \
                all-or-nothing transaction: events it holds are skipped, late ones refold only their books. \
                Prints what moved each way, both version vectors, and whether the views are now equal. \
                The other store is created when its directory does not exist. A second sync moves nothing.

                With --server URL (and --token, or $READING_SYNC_TOKEN, from `replay sync register`): pushes this \
                reader's events the server has not acknowledged, then pulls and merges what the device lacks \
                (its other devices' events and partners' shared events); safe to interrupt and repeat. A new \
                device's first sync creates its store when --store names a new or empty directory and pulls the \
                reader's history (register the device first, with an existing device's token: \
                `replay sync register --server URL --reader R --name NAME --token T`); a first sync that fails \
                before anything arrived leaves the directory as it was.
                """)

        @OptionGroup var options: StoreOptions
        @Option(help: ArgumentHelp("The other store's directory (created when missing).", valueName: "dir")) var with: String?
        @OptionGroup var server: ServerOptions
        @Option(parsing: .unconditional, help: "Events per merge transaction (at least 1).") var batch: Int = 5_000

        func validate() throws {
            guard batch >= 1 else { throw ValidationError("--batch must be at least 1, not \(batch)") }
            guard (with == nil) != (server.server == nil) else { throw ValidationError("name exactly one of --with DIR and --server URL") }
        }

        func run() async throws {
            guard let with else {
                try await syncWithServer()
                return
            }
            let other = URL(fileURLWithPath: with)
            guard options.url.resolvingSymlinksInPath().standardizedFileURL != other.resolvingSymlinksInPath().standardizedFileURL else {
                throw ReplayError("--with names the store itself (\(other.path)); name another store")
            }
            // Both stores are read whole: every page of each is checked at open, before LMDB
            // follows one, so that a damaged file is one line naming it, never a signal.
            let a = try options.openExisting(checkPages: true)
            let b = try ReadingStore.open(at: other, options: LMDBEnvironmentOptions(checkPages: true))
            guard a.replica != b.replica else {
                // A copy or a restore gets a new replica ID at its first writable open; two stores of
                // one replica ID can only be the same store reached by two paths (a bind mount).
                throw ReplayError("both stores are replica \(a.replica): they are one store reached by two paths (a bind mount or a hard link); sync with another store")
            }
            // A store restored from a backup (whatever the file system shows) issues its replica's
            // sequences again: each store first compares the other's copies of its own replica's
            // sequences with its own events, and continues as a new replica when they differ.
            for (store, path, peer) in [(a, options.url.path, b), (b, other.path, a)] {
                if let notice = try store.noticeRestore(from: peer.witnesses(of: store.replica)) {
                    print("\(path): \(notice)")
                }
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
                    ? "\(kept) event(s) are in the quarantine of one store and not the other (`replay sync quarantine` on each lists them)"
                    : "a store holds events without an origin (appended through the raw log), which never leave it"
                throw ReplayError("views differ after the exchange (\(da) and \(db)): \(cause)")
            }
        }

        /// `--server`: syncs the store, creating it first when `--store` names a new or empty
        /// directory (a new device's first sync: it pulls the reader's history). Registers nothing:
        /// the token names a device already registered. A new store that the first sync leaves
        /// empty (a refused token, a server out of reach) is removed again.
        func syncWithServer() async throws {
            _ = try server.resolvedToken()  // before anything is created
            let (store, created) = try options.openCreatingWhenNew()
            do {
                let client = try server.client(store: store)
                let report = try await talkingToServer { try await client.sync() }
                if created != nil {
                    print("\(options.url.path): created a new store (replica \(store.replica)) for this device")
                }
                print("\(server.server?.description ?? ""): \(report)")
            } catch {
                if let created, (try? store.lastPosition()) == 0 { created.remove() }
                throw error
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
}
