import ArgumentParser
import EventStoreLMDB
import Foundation

extension Replay {
    /// `replay rebuild`: the views (or one) from the log, into a shadow swapped in atomically.
    struct Rebuild: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Rebuild the views (or one) from the log into a shadow, then swap it in atomically.",
            discussion: """
                A crash or error before the final commit leaves the old views intact. --jobs N folds N readers at \
                once (readers are independent; one thread writes, in reader order): the views and digest are those \
                of --jobs 1. On a terminal a progress bar shows events/s and time left; a final line always gives \
                the count, time and rate.
                """)

        @OptionGroup var options: StoreOptions
        @Option(help: "Rebuild only this view, with all of its tables (values: \(ViewTable.views.joined(separator: ", "))).",
                transform: ViewName.parse) var view: ViewName?
        @Option(help: ArgumentHelp("Fold this many readers at once, \(ReadingStore.rebuildJobsRange.lowerBound) ... \(ReadingStore.rebuildJobsRange.upperBound) (default: the processor cores, \(ReadingStore.defaultRebuildJobs) here).",
                                   valueName: "n"),
                transform: RebuildJobs.parse) var jobs: RebuildJobs?
        @Flag(help: "Print the report as JSON.") var json = false

        /// The `--json` output.
        struct Output: Encodable {
            let events: UInt64
            let seconds: Double
            let eventsPerSecond: Double
            let digest: String
            /// The view rebuilt, or "all".
            let view: String
            let logEvents: UInt64
        }

        func run() throws {
            let store = try options.openExisting()
            let total = try store.lastPosition()
            let progress = Progress(unit: "events", showsRate: true, json: json)
            let jobs = jobs?.count ?? ReadingStore.defaultRebuildJobs
            let report = try store.rebuild(view: view?.rawValue, jobs: jobs) { done, all in progress.bar(done, of: all) }
            progress.end()
            if json {
                try printJSON(Output(events: report.events, seconds: report.seconds, eventsPerSecond: report.eventsPerSecond,
                                     digest: report.digest, view: view?.rawValue ?? "all", logEvents: total))
            } else {
                print(String(format: "rebuilt %@ from %llu events in %.2f s (%.0f events/s); digest %@",
                             view?.rawValue ?? "all views", report.events, report.seconds, report.eventsPerSecond, report.digest))
            }
        }
    }
}
