import ArgumentParser
import EventStoreLMDB

extension Replay.Sync {
    /// `replay sync vector`: this store's replica ID and version vector.
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
