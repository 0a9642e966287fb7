import ArgumentParser
import EventStoreLMDB

extension Replay.Sync {
    /// `replay sync retry-quarantine`: merge the quarantine again.
    struct RetryQuarantine: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "retry-quarantine",
            abstract: "Merge the quarantine again (events this build now takes leave it), then list what is left; exchanges nothing.")

        @OptionGroup var options: StoreOptions

        func run() throws {
            let store = try options.openExisting()
            print("retried: \(try store.retryQuarantine())")
            try Quarantine.list(store)
        }
    }
}
