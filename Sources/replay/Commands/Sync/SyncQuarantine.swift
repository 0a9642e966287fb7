import ArgumentParser
import EventStoreLMDB

extension Replay.Sync {
    /// `replay sync quarantine`: the events merges kept aside.
    struct Quarantine: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the events merges kept aside, each with its reason; exchanges nothing and writes nothing.")

        @OptionGroup var options: StoreOptions

        func run() throws {
            try Self.list(try options.openExisting(readOnly: true))
        }

        /// Prints every quarantined event and the count.
        static func list(_ store: ReadingStore) throws {
            let entries = try store.quarantine()
            for entry in entries { print("quarantined \(entry)") }
            print("\(entries.count) event(s) in the quarantine")
        }
    }
}
