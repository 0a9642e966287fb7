import ArgumentParser
import EventStoreLMDB
import Foundation
import ReadingEvents

extension Replay {
    struct Demo: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a seeded, realistic reading history into the store, then show the dashboard.",
            discussion: """
                Several readers in several time zones, months of daily reading, timed sessions, sentences, \
                memos, ratings, likes, finishes, a re-read, a did-not-finish and back-dated entries. The same \
                options always write the same events; running it again on the same store adds nothing.
                """)

        @OptionGroup var options: StoreOptions
        @Option(help: "Number of readers.") var readers: Int = 4
        @Option(help: "Days of history per reader.") var days: Int = 120
        @Option(help: "Write at least this many events, adding readers in batches of 50 (overrides --readers; e.g. 1000000 for benchmarks).") var events: Int?
        @Option(help: "The seed of the generator.") var seed: UInt64 = 20_261_121
        @Option(help: "Events appended per write transaction.") var chunk: Int = 5_000
        @Flag(help: "Do not show the dashboard afterwards.") var quiet = false

        func validate() throws {
            guard readers >= 1 else { throw ValidationError("--readers must be at least 1") }
            guard (1...3650).contains(days) else { throw ValidationError("--days must be in 1 ... 3650") }
            if let events { guard events >= 1 else { throw ValidationError("--events must be at least 1") } }
            guard chunk >= 1 else { throw ValidationError("--chunk must be at least 1") }
        }

        func run() throws {
            let store = try ReadingStore.open(at: options.url)
            let start = ContinuousClock.now
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
                    if stderrIsTerminal {
                        FileHandle.standardError.write(Data("\rdemo: \(written) events written".utf8))
                    }
                }
                first += count
            }
            let readerCount = first
            if stderrIsTerminal { warn("") }
            let elapsed = seconds(since: start)
            warn("demo: \(generated) events generated for \(readerCount) readers, \(written) new, in \(String(format: "%.1f", elapsed)) s")
            if !quiet {
                var show = try Show.parse(["--store", options.url.path])
                show.store = store
                try show.run()
            }
        }
    }
}
