import ArgumentParser
import EventStoreLMDB
import Foundation
import ReadingEvents

extension Replay {
    /// `replay import FILE`: a JSON Lines file (the export format), all or nothing up to
    /// `--events-per-commit` events, in whole parts beyond.
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import a JSON Lines file (the export format), all or nothing; events already stored are skipped.",
            discussion: """
                Every line is decoded and checked first (the rules commands apply that do not depend on history, \
                page counts, and conflicts: an event ID repeated with different content); a refused line stops the \
                import with its line number and nothing of the file is imported. Event IDs already in the store are skipped, so importing \
                the same file twice adds nothing. Imported events get new positions in this store, in file order. A file of more than \
                --events-per-commit events is committed in parts of that many, each whole: if it stops, importing it again adds the rest.
                """)

        @OptionGroup var options: StoreOptions
        @Argument(help: "The JSON Lines file (- for stdin).") var file: String
        @OptionGroup var parts: ImportPartOptions

        func run() throws {
            if file != "-" { try checkInputFile(file) }
            // Read as a stream, a batch of lines at a time (never the whole file in memory): first
            // every line is decoded and each batch checked by the rules that need no store (lines
            // of new facts, no origin, by the rules of a command), so a refused file seldom reaches
            // a store; then the store's one write transaction reads the lines again and checks
            // every rule, lines of a replica's events (with their origin) by the rules of a merge.
            let input = try JSONLinesInput(path: file)
            var events = 0
            try input.forEachBatch { envelopes, lines in
                let local = envelopes.indices.filter { envelopes[$0].origin == nil }
                do { try RecordedBatch.check(local.map { envelopes[$0] }) } catch let rejection as RecordedEventRejection {
                    throw refusal(rejection.renumbered(local), lines)
                }
                events += envelopes.count
            }
            if events == 0 {
                // A store already at the path is still checked (a damaged one is still reported); none is created.
                if FileManager.default.fileExists(atPath: options.url.path) { _ = try ReadingStore.open(at: options.url) }
                print("\(file): empty file, nothing imported")
                return
            }
            let existed = FileManager.default.fileExists(atPath: options.url.path)
            var lines: [Int] = []
            // The line of the last event handed to the store; what the committed parts hold (a
            // part ends after the last batch handed to it, so at its commit that line is its last).
            var lastLine = 0
            var committed = (events: 0, line: 0, parts: 0)
            let added: Int
            do {
                let store = try ReadingStore.open(at: options.url)
                do {
                    added = try store.appendRecorded(partsOf: parts.eventsPerCommit, batches: { skipping, body in
                        try input.forEachBatch(skipping: skipping, batchSize: parts.eventsPerCommit) { envelopes, batchLines in
                            lines = batchLines
                            lastLine = batchLines.last ?? lastLine
                            try body(envelopes)
                        }
                    }, committed: { taken in
                        committed = (taken, lastLine, committed.parts + 1)
                    })
                } catch let rejection as RecordedEventRejection {
                    throw refusal(rejection, lines, committed, of: events)
                } catch let rejection as MergeRejection {
                    throw ReplayError("\(file) line \(lines[rejection.index]): event \(rejection.eventID): \(rejection.field): \(rejection.detail) [rule: \(rejection.rule.rawValue)]; \(ImportPartOptions.stopped(committed: committed.events, of: events, throughLine: committed.line))")
                }
            } catch {
                // Nothing was written; a store this import created is not left behind. A part
                // committed stays (and so does its store).
                if !existed && committed.events == 0 { try? FileManager.default.removeItem(at: options.url) }
                throw error
            }
            let inParts = committed.parts > 1 ? ", committed in \(committed.parts) parts" : ""
            print("imported \(added) new events of \(events) from \(file) (\(events - added) already stored\(inParts))")
        }

        /// The refusal of a line of a batch whose line numbers are `lines`; `committed`, what the
        /// parts committed before hold (none in the check pass).
        func refusal(_ rejection: RecordedEventRejection, _ lines: [Int],
                     _ committed: (events: Int, line: Int, parts: Int) = (0, 0, 0), of total: Int = 0) -> ReplayError {
            let reason: String
            switch rejection.reason {
            case .invalid(let error): reason = error.description
            case .conflictsWithBatch(let index):
                reason = "conflict: the same event ID is on line \(lines[index]) with different content"
            case .conflictsWithStored:
                reason = rejection.reasonText
            }
            return ReplayError("\(file) line \(lines[rejection.index]): event \(rejection.eventID): \(reason); \(ImportPartOptions.stopped(committed: committed.events, of: total, throughLine: committed.line))")
        }
    }
}
