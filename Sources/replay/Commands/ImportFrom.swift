import ArgumentParser
import EventStoreLMDB
import Foundation
import ReadingEvents
import ReadingImport

extension ImportSource: ExpressibleByArgument {}
extension UndatedFinishPolicy: ExpressibleByArgument {}

extension Replay {
    /// `replay import-from SOURCE FILE`: another app's export as events.
    struct ImportFrom: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import-from",
            abstract: "Import a reader's history from Goodreads, StoryGraph (CSV exports) or KOReader (statistics.sqlite3).",
            discussion: """
                Every row becomes ordinary events for --reader, checked by the same rules as a recorded one, \
                and appended all or nothing (a file of more than --events-per-commit events in parts of that many, each whole). Event IDs derive from the reader, the source and each row's own \
                identity, so importing the same file again adds nothing and a newer export adds only what is \
                new. CSV dates are calendar days in --zone; KOReader's instants are put on days and hours in \
                --zone. Rows that cannot be expressed are skipped into the report. With --dry-run nothing is \
                written. A progress bar runs on stderr when it is a terminal; the last line is a summary.
                """)

        @OptionGroup var options: StoreOptions
        @Argument(help: "The source: goodreads, storygraph or koreader.") var source: ImportSource
        @Argument(help: "The export file (CSV, or KOReader's statistics.sqlite3).") var file: String
        @Option(help: "The reader the history belongs to.", transform: ReaderID.parse) var reader: ReaderID
        @Option(help: "The reader's IANA time zone (e.g. Asia/Seoul): CSV dates are days there, KOReader times are placed there.",
                transform: ZoneID.parse)
        var zone: ZoneID
        @Option(help: "A book shelved read without a date: leave (import unfinished) or date-added (finish on the date added, flagged).")
        var undatedFinish: UndatedFinishPolicy = .leaveUnfinished
        @Option(help: "Goodreads: the exclusive shelf that means did-not-finish.") var dnfShelf = "did-not-finish"
        @Option(help: "KOReader: minutes between page stays that end a reading session.") var sessionGap = 5
        @Flag(help: "KOReader: the device clock showed local time while set to UTC; shift its times by --zone's offset.")
        var deviceClockLocal = false
        @Flag(help: "Read and report, write nothing.") var dryRun = false
        @Flag(help: "Print the report as JSON.") var json = false
        @OptionGroup var parts: ImportPartOptions

        func validate() throws {
            guard (1...1440).contains(sessionGap) else { throw ValidationError("--session-gap \(sessionGap) is outside 1 ... 1440 minutes") }
        }

        func run() throws {
            try checkInputFile(file)
            var importOptions = ImportOptions(
                reader: reader, zone: zone, importedAt: Timestamp(Date()),
                undatedFinish: undatedFinish, didNotFinishShelf: dnfShelf, sessionGapSeconds: sessionGap * 60,
                deviceClockIsLocal: deviceClockLocal)
            // Only --json prints the list of every book.
            importOptions.listsBooks = json
            let progress = Progress(unit: "rows", json: json)
            let result: ImportResult
            do {
                result = try HistoryImport.read(source, from: URL(fileURLWithPath: file), options: importOptions) { done, all in
                    if done % 100 == 0 || done == all { progress.bar(done, of: all) }
                }
            } catch {
                throw ReplayError("\(file): \(error)")
            }
            progress.end()
            let report = result.report
            var added = 0, stored = 0
            var rejected: [ReadingStore.ImportOutcome.Rejection] = []
            var titles: [BookID: String] = [:]
            if !dryRun {
                let store = try ReadingStore.open(at: options.url)
                let outcome: ReadingStore.ImportOutcome
                var committed = 0
                do {
                    outcome = try store.importHistory(partsOf: parts.eventsPerCommit, batches: { skipping, body in
                        try result.forEachBatch(of: min(4_096, parts.eventsPerCommit), skipping: skipping, body)
                    }, committed: { committed = $0 })
                } catch let rejection as RecordedEventRejection {
                    throw ReplayError("\(file): \(rejection.reasonText); \(ImportPartOptions.stopped(committed: committed, of: result.eventCount))")
                }
                added = outcome.added; stored = outcome.alreadyStored; rejected = outcome.rejected
                // The titles of the books a "not taken" line names, as the store holds them.
                if !rejected.isEmpty {
                    try store.withViews { views in
                        for book in Set(rejected.compactMap(\.book)) {
                            titles[book] = try views.bookView(reader: reader, book: book)?.metadata.title
                        }
                    }
                }
            }
            let elapsed = progress.seconds
            let summary = dryRun
                ? "dry run: \(report.bookCount) books, \(result.eventCount) events from \(file); nothing written"
                : "imported \(added) new events of \(result.eventCount) (\(stored) already stored, \(rejected.count) not fitting the stored history) for \(report.bookCount) books from \(file) in \(String(format: "%.2f", elapsed)) s (\(report.rows) rows, \(Int(Double(report.rows) / max(elapsed, 0.001))) rows/s); \(report.skippedRows) rows skipped, \(report.warnings.count) warnings"
            if json {
                try printJSON(Output(report: report, added: added, alreadyStored: stored, events: result.eventCount, seconds: elapsed,
                                     dryRun: dryRun, reader: reader.description, zone: zone.identifier,
                                     rejectedByStore: rejected.map {
                                         Output.Rejection(eventID: $0.eventID.description, type: $0.type, book: $0.book?.description ?? "", reason: $0.reason)
                                     }))
            } else {
                print(report.text)
                for r in rejected {
                    print(printable("  not taken: \(r.type) of \(r.book.flatMap { titles[$0] } ?? "?"): \(r.reason)"))
                }
                print(printable(summary))
            }
        }
    }
}

extension Replay.ImportFrom {
    /// The `--json` output: the import report's keys, and what the store did with its events.
    struct Output: Encodable {
        /// An event the store did not take.
        struct Rejection: Encodable { let eventID: String, type: String, book: String, reason: String }
        let report: ImportReport
        let added: Int, alreadyStored: Int, events: Int
        /// Seconds from the start of reading the file to the end of the import.
        let seconds: Double
        let dryRun: Bool
        let reader: String, zone: String
        let rejectedByStore: [Rejection]

        private enum CodingKeys: String, CodingKey { case added, alreadyStored, events, seconds, dryRun, reader, zone, rejectedByStore }

        func encode(to encoder: any Encoder) throws {
            // The report's keys and these in one object.
            try report.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(added, forKey: .added)
            try container.encode(alreadyStored, forKey: .alreadyStored)
            try container.encode(events, forKey: .events)
            try container.encode(seconds, forKey: .seconds)
            try container.encode(dryRun, forKey: .dryRun)
            try container.encode(reader, forKey: .reader)
            try container.encode(zone, forKey: .zone)
            try container.encode(rejectedByStore, forKey: .rejectedByStore)
        }
    }
}
