import ArgumentParser
import EventStoreLMDB
import Foundation
import Projections
import ReadingEvents
import ReadingReport

extension Replay {
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
        @Option(help: "The reader (UUID).") var reader: String
        @Option(help: "The calendar year, 1900 ... 2199 (default: the year of \"today\", kept in that range).") var year: Int?
        @Option(parsing: .unconditional, help: "\"Today\" for the report: an ISO 8601 date or instant.") var asOf: String?
        @Option(help: "The IANA zone for \"today\" (default: the zone of the reader's last event in canonical order).") var zone: String?
        @Option(help: "The HTML file to write (its directory must exist).") var out: String

        func validate() throws {
            if ReaderID(uuidString: reader) == nil { throw ValidationError("--reader \"\(reader)\" is not a UUID") }
            if let zone, (try? ZoneID(zone)) == nil { throw ValidationError("--zone \"\(zone)\" is not an IANA time zone identifier") }
            if let asOf { try checkDateOption("--as-of", asOf) }
            if let year, !Limits.challengeYears.contains(year) {
                throw ValidationError("--year \(year) is outside \(Limits.challengeYears.lowerBound) ... \(Limits.challengeYears.upperBound)")
            }
            if out.isEmpty || out.hasSuffix("/") { throw ValidationError("--out \"\(out)\" is not a file name") }
        }

        func run() throws {
            try checkOutputFile(out)
            let store = try options.openExisting()
            let reader = ReaderID(uuidString: self.reader)!
            // The reader's last event in canonical order: the same on every store holding the same events.
            guard let last = try store.withViews({ try $0.lastEvent(reader: reader) }) else {
                throw ReplayError("reader \(reader) has no events in \(options.url.path)")
            }
            let zone = try zone.map { try ZoneID($0) } ?? last.timeZone
            let asOf = try asOf.map { try parseInstant($0, zone: zone) } ?? last.occurredAt
            let clock = LocalClock(dayStartHour: store.dayStartHour)
            let data: ReportData
            do {
                data = try store.withViews { views in
                    try views.reportData(reader: reader, year: year, asOf: asOf, zone: zone, clock: clock)
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
