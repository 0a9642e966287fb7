import ArgumentParser
import EventStoreLMDB
import Foundation
import ReadingEvents

extension Replay {
    struct Sync: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Exchange events with another local store, both ways, until both hold the same events.",
            discussion: """
                Each store sends what the other's version vector says it lacks (`changes(since:)`), in \
                canonical order and in batches of --batch events, and the other merges each batch in one \
                all-or-nothing transaction: events it holds are skipped, late ones refold only their books. \
                Prints what moved each way, both version vectors, and whether the views are now equal. \
                The other store is created when its directory does not exist. A second sync moves nothing.
                """)

        @OptionGroup var options: StoreOptions
        @Option(help: "The other store's directory (created when missing).") var with: String
        @Option(parsing: .unconditional, help: "Events per merge transaction (at least 1).") var batch: Int = 5_000

        func validate() throws {
            guard batch >= 1 else { throw ValidationError("--batch must be at least 1, not \(batch)") }
        }

        func run() throws {
            let other = URL(fileURLWithPath: with)
            guard options.url.resolvingSymlinksInPath().standardizedFileURL != other.resolvingSymlinksInPath().standardizedFileURL else {
                throw ReplayError("--with names the store itself (\(other.path)); name another store")
            }
            let a = try options.openExisting()
            let b = try ReadingStore.open(at: other)
            guard a.replica != b.replica else {
                throw ReplayError("both stores are replica \(a.replica): one is a file copy of the other, and their sequence numbers would collide; sync a store with a copy made by `replay sync` into an empty directory instead")
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
                throw ReplayError("views differ after the exchange (\(da) and \(db)): a store holds events without an origin (appended through the raw log), which never leave it")
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
                let result = try target.merge(page)
                total.received += result.received
                total.appended += result.appended
                total.alreadyHeld += result.alreadyHeld
                total.refoldedBooks += result.refoldedBooks
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
