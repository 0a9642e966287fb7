import ArgumentParser
import EventStoreLMDB
import Foundation
import Projections
import ReadingEvents
import ReadingReport

extension Replay {
    /// `replay report`: one reader's year as a self-contained HTML page.
    struct Report: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write the reading report of one reader and year: one self-contained HTML page of charts.",
            discussion: """
                The page holds a year page calendar, daily bars, time-of-day bars, monthly pages and finishes, \
                streak runs, finished books by category, the yearly challenge with its pace line, the year in \
                review, the bookshelf as a stack of spines and the home list with D-days; inline SVG and CSS, \
                no script, nothing fetched. "Today" is --as-of in --zone (default: the time and zone of the \
                reader's last event in canonical order); --year defaults to the year of today. The file is written whole or \
                not at all, \
                as a regular file readable by its owner only (0600); a FIFO, a device, a symbolic link, a directory \
                or a store's directory at --out is refused.
                """)

        @OptionGroup var options: StoreOptions
        @Option(help: "The reader.", transform: ReaderID.parse) var reader: ReaderID
        @Option(help: ArgumentHelp("The calendar year, 1900 ... 2199 (default: the year of \"today\", kept in that range).", valueName: "year"),
                transform: ChallengeYear.parse)
        var year: ChallengeYear?
        @OptionGroup var todayOptions: TodayOptions
        @Option(help: "The HTML file to write (its directory must exist).") var out: String

        func validate() throws {
            if out.isEmpty || out.hasSuffix("/") { throw ValidationError("--out \"\(out)\" is not a file name") }
        }

        func run() throws {
            try checkOutputFile(out)
            let store = try options.openExisting()
            // The reader's last event in canonical order: the same on every store holding the same events.
            guard let last = try store.withViews({ try $0.lastEvent(reader: reader) }) else {
                throw ReplayError("reader \(reader) has no events in \(options.url.path)")
            }
            let zone = todayOptions.zone ?? last.timeZone
            let asOf = todayOptions.asOf?.instant(in: zone) ?? last.occurredAt
            let clock = LocalClock(dayStartHour: store.dayStartHour)
            let data: ReportData
            do {
                data = try store.withViews { views in
                    try views.reportData(reader: reader, year: year?.value, asOf: asOf, zone: zone, clock: clock)
                }
            } catch let error as ReportDataError {
                throw ReplayError(error.description)
            }
            let html = ReportPage.html(for: data)
            try writeOutputFile(Data(html.utf8), to: out)
            print("wrote \(URL(fileURLWithPath: out).path): report \(data.year) of reader \(reader), \(html.utf8.count) bytes")
        }
    }
}
