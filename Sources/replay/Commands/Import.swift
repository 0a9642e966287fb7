import ArgumentParser
import EventStoreLMDB
import Foundation
import ReadingEvents

extension Replay {
    /// `replay import FILE`: a JSON Lines file (the export format), all or nothing.
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import a JSON Lines file (the export format), all or nothing; events already stored are skipped.",
            discussion: """
                Every line is decoded and checked first (the rules commands apply that do not depend on history, \
                page counts, and conflicts: an event ID repeated with different content); a refused line stops the \
                import with its line number and nothing of the file is imported. Event IDs already in the store are skipped, so importing \
                the same file twice adds nothing. Imported events get new positions in this store, in file order.
                """)

        @OptionGroup var options: StoreOptions
        @Argument(help: "The JSON Lines file (- for stdin).") var file: String

        func run() throws {
            let data: Data
            if file == "-" { data = FileHandle.standardInput.readDataToEndOfFile() } else {
                try checkInputFile(file)
                guard let contents = FileManager.default.contents(atPath: file) else {
                    throw ReplayError("\(file): cannot be read (\(reason(access(file, R_OK) == 0 ? EIO : errno)))")
                }
                data = contents
            }
            if data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
                // A store already at the path is still checked (a damaged one is still reported); none is created.
                if FileManager.default.fileExists(atPath: options.url.path) { _ = try ReadingStore.open(at: options.url) }
                print("\(file): empty file, nothing imported")
                return
            }
            var envelopes: [EventEnvelope] = []
            var lineNumbers: [Int] = []
            var lineNumber = 0
            for line in data.split(separator: 0x0A, omittingEmptySubsequences: false) {
                lineNumber += 1
                if line.isEmpty || line.allSatisfy({ $0 == 0x20 || $0 == 0x0D || $0 == 0x09 }) { continue }
                do {
                    envelopes.append(try JSONEventCodec.decode(line))
                    lineNumbers.append(lineNumber)
                } catch {
                    throw ReplayError("\(file) line \(lineNumber): \(error); nothing was imported")
                }
            }
            func refusal(_ rejection: RecordedEventRejection) -> ReplayError {
                let reason: String
                switch rejection.reason {
                case .invalid(let error): reason = error.description
                case .conflictsWithBatch(let index):
                    reason = "conflict: the same event ID is on line \(lineNumbers[index]) with different content"
                case .conflictsWithStored:
                    reason = rejection.reasonText
                }
                return ReplayError("\(file) line \(lineNumbers[rejection.index]): event \(rejection.eventID): \(reason); nothing was imported")
            }
            // The rules that need no store first, so a refused file never creates one: lines of new
            // facts (no origin) by the rules of a command; lines of a replica's events (with their
            // origin) by the rules of a merge, in the store.
            let local = envelopes.indices.filter { envelopes[$0].origin == nil }
            do { try RecordedBatch.check(local.map { envelopes[$0] }) } catch let rejection as RecordedEventRejection {
                throw refusal(rejection.renumbered(local))
            }
            let store = try ReadingStore.open(at: options.url)
            let added: Int
            do { added = try store.appendRecorded(envelopes) } catch let rejection as RecordedEventRejection {
                throw refusal(rejection)
            } catch let rejection as MergeRejection {
                throw ReplayError("\(file) line \(lineNumbers[rejection.index]): event \(rejection.eventID): \(rejection.field): \(rejection.detail) [rule: \(rejection.rule.rawValue)]; nothing was imported")
            }
            print("imported \(added) new events of \(envelopes.count) from \(file) (\(envelopes.count - added) already stored)")
        }
    }
}
