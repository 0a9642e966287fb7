import ArgumentParser
import EventStoreLMDB
import Foundation
import ReadingEvents
import ReadingImport

extension ImportSource: ExpressibleByArgument {}
extension UndatedFinishPolicy: ExpressibleByArgument {}

extension Replay {
    struct ImportFrom: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import-from",
            abstract: "Import a reader's history from Goodreads, StoryGraph (CSV exports) or KOReader (statistics.sqlite3).",
            discussion: """
                Every row becomes ordinary events for --reader, checked by the same rules as a recorded one, \
                and appended all or nothing. Event IDs derive from the reader, the source and each row's own \
                identity, so importing the same file again adds nothing and a newer export adds only what is \
                new. CSV dates are calendar days in --zone; KOReader's instants are put on days and hours in \
                --zone. Rows that cannot be expressed are skipped into the report. With --dry-run nothing is \
                written. A progress bar runs on stderr when it is a terminal; the last line is a summary.
                """)

        @OptionGroup var options: StoreOptions
        @Argument(help: "The source: goodreads, storygraph or koreader.") var source: ImportSource
        @Argument(help: "The export file (CSV, or KOReader's statistics.sqlite3).") var file: String
        @Option(help: "The reader the history belongs to (UUID).") var reader: String
        @Option(help: "The reader's IANA time zone (e.g. Asia/Seoul): CSV dates are days there, KOReader times are placed there.")
        var zone: String
        @Option(help: "A book shelved read without a date: leave (import unfinished) or date-added (finish on the date added, flagged).")
        var undatedFinish: UndatedFinishPolicy = .leaveUnfinished
        @Option(help: "Goodreads: the exclusive shelf that means did-not-finish.") var dnfShelf = "did-not-finish"
        @Option(help: "KOReader: minutes between page stays that end a reading session.") var sessionGap = 5
        @Flag(help: "KOReader: the device clock showed local time while set to UTC; shift its times by --zone's offset.")
        var deviceClockLocal = false
        @Flag(help: "Read and report, write nothing.") var dryRun = false
        @Flag(help: "Print the report as JSON.") var json = false

        func validate() throws {
            guard ReaderID(uuidString: reader) != nil else { throw ValidationError("--reader \"\(reader)\" is not a UUID") }
            guard (try? ZoneID(zone)) != nil else { throw ValidationError("--zone \"\(zone)\" is not an IANA time zone") }
            guard (1...1440).contains(sessionGap) else { throw ValidationError("--session-gap \(sessionGap) is outside 1 ... 1440 minutes") }
        }

        func run() throws {
            try checkInputFile(file)
            let importOptions = ImportOptions(
                reader: ReaderID(uuidString: reader)!, zone: try ZoneID(zone), importedAt: Timestamp(Date()),
                undatedFinish: undatedFinish, didNotFinishShelf: dnfShelf, sessionGapSeconds: sessionGap * 60,
                deviceClockIsLocal: deviceClockLocal)
            let interactive = stderrIsTerminal && !json
            let start = ContinuousClock.now
            let result: ImportResult
            do {
                result = try HistoryImport.read(source, from: URL(fileURLWithPath: file), options: importOptions) { done, all in
                    guard interactive, all > 0, done % 100 == 0 || done == all else { return }
                    let width = 30
                    let filled = Int(Double(width) * Double(done) / Double(all))
                    let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: max(0, width - filled))
                    FileHandle.standardError.write(Data(String(format: "\r[%@] %3.0f%% %d/%d rows ", bar, 100 * Double(done) / Double(all), done, all).utf8))
                }
            } catch {
                throw ReplayError("\(file): \(error)")
            }
            if interactive { warn("") }
            let report = result.report
            var added = 0, stored = 0
            var rejected: [ReadingStore.ImportOutcome.Rejection] = []
            if !dryRun {
                let store = try ReadingStore.open(at: options.url)
                let outcome: ReadingStore.ImportOutcome
                do { outcome = try store.importHistory(batches: { try result.forEachBatch($0) }) } catch let rejection as RecordedEventRejection {
                    throw ReplayError("\(file): \(rejection.reasonText); nothing was imported")
                }
                added = outcome.added; stored = outcome.alreadyStored; rejected = outcome.rejected
            }
            let titles = Dictionary(report.books.map { ($0.book, $0.title) }, uniquingKeysWith: { a, _ in a })
            let elapsed = seconds(since: start)
            let summary = dryRun
                ? "dry run: \(report.books.count) books, \(result.eventCount) events from \(file); nothing written"
                : "imported \(added) new events of \(result.eventCount) (\(stored) already stored, \(rejected.count) not fitting the stored history) for \(report.books.count) books from \(file) in \(String(format: "%.2f", elapsed)) s (\(report.rows) rows, \(Int(Double(report.rows) / max(elapsed, 0.001))) rows/s); \(report.skippedRows) rows skipped, \(report.warnings.count) warnings"
            if json {
                let data = try JSONEncoder.sorted.encode(report)
                var object = try JSONSerialization.jsonObject(with: data) as! [String: Any]
                object["added"] = added; object["alreadyStored"] = stored; object["events"] = result.eventCount
                object["seconds"] = elapsed
                object["dryRun"] = dryRun; object["reader"] = reader; object["zone"] = zone
                object["rejectedByStore"] = rejected.map {
                    ["eventID": $0.eventID.description, "type": $0.type, "book": $0.book?.description ?? "", "reason": $0.reason]
                }
                try printJSON(object)
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

extension JSONEncoder {
    /// Sorted keys, for reports.
    static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}
