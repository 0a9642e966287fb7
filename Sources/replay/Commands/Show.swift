import ArgumentParser
import EventStoreLMDB
import Foundation
import Projections
import ReadingEvents

extension Replay {
    /// `replay show`: the dashboard of each reader, as text or JSON.
    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the dashboard: home list, bookshelf, summary, streaks, page calendar, daily, time-of-day and monthly bars, reading speed.",
            discussion: """
                Without --reader, every reader of the store in turn. "Today" is --as-of in the reader's zone \
                (the zone of their last event in canonical order, the same on every store holding the same events, \
                unless --zone is given); without --as-of, the reader's latest \
                moment in the history (the latest occurredAt or recordedAt of their events, so a back-dated \
                entry does not pull it back), or the machine's clock when that is sooner. \
                The daily bars run from --since to --until, days in the reader's zone (default: the 30 days \
                ending at --until, else at "today"). With --since or --until, the daily bars are clamped to the reader's history: from the first \
                day with reading (or the day of that last event, if earlier) to the last such day, so any \
                range costs no more than the history holds. Text output shows control characters escaped.
                """)

        @OptionGroup var options: StoreOptions
        @Option(help: "Only this reader.", transform: ReaderID.parse) var reader: ReaderID?
        @OptionGroup var todayOptions: TodayOptions
        @OptionGroup var range: RangeOptions
        @Flag(help: "Print the same data as JSON.") var json = false

        /// A store already opened by `demo`.
        var store: ReadingStore?

        enum CodingKeys: CodingKey { case options, reader, todayOptions, range, json }

        func run() throws {
            let store = try self.store ?? options.openExisting()
            let readers = try reader.map { [$0] } ?? store.readers()
            let out = OutputBuffer()
            if json { out.write("[") }
            var first = true
            for reader in readers {
                // The reader's last event in canonical order, not in this store's log order: two
                // stores holding the same events show the same zone, "today" and range.
                guard let last = try store.withViews({ try $0.lastEvent(reader: reader) }) else {
                    if self.reader != nil { throw ReplayError("reader \(reader) has no events in \(options.url.path)") }
                    continue
                }
                let zone = todayOptions.zone ?? last.timeZone
                let asOf = try todayOptions.asOf?.instant(in: zone)
                    ?? store.withViews { try $0.defaultAsOf(reader: reader, now: Timestamp(Date())) } ?? last.occurredAt
                let clock = LocalClock(dayStartHour: store.dayStartHour)
                let today = clock.localDay(of: asOf, in: zone)
                let to = range.until.map { clock.localDay(of: $0.instant(in: zone, endOfDay: true), in: zone) } ?? today
                // 30 days ending at --until, else at "today".
                let from = range.since.map { clock.localDay(of: $0.instant(in: zone), in: zone) } ?? to.adding(days: -29)
                guard from <= to else { throw ReplayError("--since is after --until") }
                let latestDay = clock.localDay(of: last.occurredAt, in: last.timeZone)
                let clamped = range.isSet
                try store.withViews { views in
                    let dashboard = try Dashboard(reader: reader, views: views, asOf: asOf, zone: zone, today: today, clock: clock)
                    let daily = try DailyBars(reader: reader, views: views, requested: from...to, clampedTo: clamped ? latestDay : nil)
                    if json {
                        if !first { out.write(",") }
                        try dashboard.writeJSON(daily: daily, to: out)
                    } else {
                        dashboard.writeText(daily: daily, to: out)
                    }
                }
                first = false
            }
            if json { out.write("]\n") }
            out.flush()
        }
    }
}
