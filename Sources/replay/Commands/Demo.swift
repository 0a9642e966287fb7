import ArgumentParser
import DemoHistory
import EventStoreLMDB
import Foundation
import ReadingEvents

extension Replay {
    /// `replay demo`: a seeded history, then the dashboard.
    struct Demo: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a seeded, realistic reading history into the store, then show the dashboard.",
            discussion: """
                Several readers in several time zones, months of daily reading, timed sessions, sentences, \
                memos, ratings, likes, finishes, a re-read, a did-not-finish and back-dated entries. The same \
                options always write the same events; running it again on the same store adds nothing.
                """)

        @OptionGroup var options: StoreOptions
        // `.unconditional`: a negative number ("-5") is read as the value and refused by the rule
        // below, instead of being taken for an option ("Missing value").
        @Option(parsing: .unconditional, help: "Number of readers (1 ... 10000).") var readers: Int = 4
        @Option(parsing: .unconditional, help: "Days of history per reader (1 ... 3650).") var days: Int = 120
        @Option(parsing: .unconditional, help: "Write at least this many events (1 ... 10000000), adding readers in batches of 50 (overrides --readers; e.g. 1000000 for benchmarks).") var events: Int?
        @Option(parsing: .unconditional, help: "The seed of the generator (a whole number 0 ... 18446744073709551615).",
                transform: Self.seed) var seed: UInt64 = 20_261_121
        @Option(parsing: .unconditional, help: "Events appended per write transaction (1 ... 1000000).") var chunk: Int = 5_000

        /// The most readers `--readers` takes: 10,000 (about 4 million events at the default 120
        /// days; `--events` scales a history further, 50 readers at a time).
        static let maxReaders = 10_000
        /// The most events `--events` asks for: 10,000,000 (ten times the benchmarks' million; a
        /// few minutes of writing), so a mistyped number is refused instead of running for ever.
        static let maxEvents = 10_000_000
        /// The most events `--chunk` puts in one write transaction.
        static let maxChunk = 1_000_000

        /// Parses --seed, naming the rule when the text is not a seed.
        static func seed(_ text: String) throws -> UInt64 {
            guard let value = UInt64(text) else {
                throw ValidationError("--seed must be a whole number 0 ... \(UInt64.max), not \"\(text)\"")
            }
            return value
        }
        @Flag(help: "Do not show the dashboard afterwards.") var quiet = false

        func validate() throws {
            guard readers >= 1 else { throw ValidationError("--readers must be at least 1, not \(readers)") }
            guard readers <= Self.maxReaders else {
                throw ValidationError("--readers must be at most \(Self.maxReaders), not \(readers); use --events to write more")
            }
            guard (1...3650).contains(days) else { throw ValidationError("--days must be in 1 ... 3650, not \(days)") }
            if let events {
                guard events >= 1 else { throw ValidationError("--events must be at least 1, not \(events)") }
                guard events <= Self.maxEvents else { throw ValidationError("--events must be at most \(Self.maxEvents), not \(events)") }
            }
            guard chunk >= 1 else { throw ValidationError("--chunk must be at least 1, not \(chunk)") }
            guard chunk <= Self.maxChunk else { throw ValidationError("--chunk must be at most \(Self.maxChunk), not \(chunk)") }
        }

        func run() throws {
            let store = try ReadingStore.open(at: options.url, replica: DemoHistory.replica(seed: seed, readers: readers, days: days, events: events))
            let progress = Progress(unit: "events")
            var written = 0
            var generated = 0
            // Generate in batches of readers to bound memory at millions of events. With --events,
            // keep adding readers until the history holds at least that many events.
            let readersPerBatch = 50
            var first = 0
            while events.map({ generated < $0 }) ?? (first < readers) {
                let count = events == nil ? min(readersPerBatch, readers - first) : readersPerBatch
                let history = DemoHistory.generate(.init(readers: count, days: days, seed: seed, firstReaderIndex: first))
                generated += history.count
                for offset in stride(from: 0, to: history.count, by: chunk) {
                    written += try store.appendRecorded(Array(history[offset..<min(history.count, offset + chunk)]))
                    progress.line("demo: \(written) events written")
                }
                first += count
            }
            let readerCount = first
            progress.end()
            let elapsed = progress.seconds
            warn("demo: \(generated) events generated for \(readerCount) readers, \(written) new, in \(String(format: "%.1f", elapsed)) s")
            if !quiet {
                var show = try Show.parse(["--store", options.url.path])
                show.store = store
                try show.run()
            }
        }
    }
}
