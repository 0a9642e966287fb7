import ArgumentParser
import EventStoreLMDB
import Foundation
import ReadingEvents

extension Replay {
    struct Audit: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The full history in order: position, local time and zone, reader, event type and fields.")

        @OptionGroup var options: StoreOptions
        @Option(help: "Only this reader (UUID).") var reader: String?
        @Option(help: "Only this book (UUID; needs --reader).") var book: String?
        @Option(help: "Only events that occurred at or after this ISO 8601 date or instant.") var since: String?
        @Option(help: "Only events that occurred at or before this ISO 8601 date or instant.") var until: String?
        @Option(help: "Only events of this type tag (e.g. PagesRead).") var type: String?
        @Flag(help: "Print JSON Lines (the export format) instead of text.") var json = false

        func validate() throws {
            if let reader, ReaderID(uuidString: reader) == nil { throw ValidationError("--reader \"\(reader)\" is not a UUID") }
            if let book {
                guard BookID(uuidString: book) != nil else { throw ValidationError("--book \"\(book)\" is not a UUID") }
                guard reader != nil else { throw ValidationError("--book needs --reader") }
            }
            if let type, !EventType.known.map(\.tag).contains(type) {
                throw ValidationError("--type \"\(type)\" is not an event type; types are \(EventType.known.map(\.tag).joined(separator: ", "))")
            }
            let a = try since.map { try parseInstant($0, zone: .utc) }
            let b = try until.map { try parseInstant($0, zone: .utc, endOfDay: true) }
            if let a, let b, a > b { throw ValidationError("--since \(since!) is after --until \(until!)") }
        }

        func run() throws {
            let store = try options.openExisting()
            let sinceT = try since.map { try parseInstant($0, zone: .utc) }
            let untilT = try until.map { try parseInstant($0, zone: .utc, endOfDay: true) }
            func emit(_ e: EventEnvelope) {
                if let sinceT, e.occurredAt < sinceT { return }
                if let untilT, e.occurredAt > untilT { return }
                if let type, e.type.tag != type { return }
                if json { print(JSONEventCodec.encodeLine(e)); return }
                let local = localTimeText(e.occurredAt, e.timeZone)
                print("\(e.position)\t\(local) \(printable(e.timeZone.identifier))\t\(e.reader)\t\(printable(e.type.description))\t\(printable(auditFields(e)))")
            }
            if let reader = reader.flatMap(ReaderID.init(uuidString:)) {
                for e in try store.auditTrail(reader: reader, book: book.flatMap(BookID.init(uuidString:))) { emit(e) }
            } else {
                try store.forEachEvent(from: 1) { e in emit(e); return true }
            }
        }
    }

    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write the history as JSON Lines on stdout (one envelope per line; see the README for the format).")

        @OptionGroup var options: StoreOptions
        @Option(help: "Only this reader's events (UUID).") var reader: String?
        @Option(help: ArgumentHelp(
            "Only what a store with this version vector lacks, in canonical order (`replay vector` prints a store's; \"\" for a new store): a file transport for `replay import` on the other side.",
            valueName: "replica:sequence,..."))
        var sinceVector: String?
        @Flag(help: .hidden) var inProcess = false

        func validate() throws {
            if let reader, ReaderID(uuidString: reader) == nil { throw ValidationError("--reader \"\(reader)\" is not a UUID") }
            if let sinceVector {
                do { _ = try VersionVector(parsing: sinceVector) } catch { throw ValidationError("--since-vector: \(error.detail) [rule: \(error.rule.rawValue)]") }
            }
        }

        func run() throws {
            // As for `verify`: a damaged data file can make LMDB itself stop; report it as damage.
            if !inProcess {
                switch try runSelf(arguments: Array(CommandLine.arguments.dropFirst()) + ["--in-process"]) {
                case .exited(0): return
                case .exited(let code): throw ExitCode(code)
                case .signalled(SIGPIPE):
                    // The reader of our output went away (`| head`): not damage; end as a shell would.
                    throw ExitCode(128 + SIGPIPE)
                case .signalled(let signal):
                    throw ReplayError("the data file of \(options.url.path) is damaged: LMDB stopped with signal \(signal) while reading its pages (restore from a backup)")
                }
            }
            endWithParent()
            let store = try options.openExisting()
            let out = FileHandle.standardOutput
            var buffer: [UInt8] = []
            func flush() { out.write(Data(buffer)); buffer.removeAll(keepingCapacity: true) }
            func emit(_ e: EventEnvelope) {
                buffer += JSONEventCodec.encode(e); buffer.append(0x0A)
                if buffer.count > 1 << 20 { flush() }
            }
            let onlyReader = reader.flatMap(ReaderID.init(uuidString:))
            if let sinceVector {
                let vector = try VersionVector(parsing: sinceVector)
                var after: EventOrigin?
                while true {
                    let page = try store.changes(since: vector, after: after, limit: 10_000)
                    guard let last = page.last else { break }
                    for e in page where onlyReader.map({ $0 == e.reader }) ?? true { emit(e) }
                    after = last.origin
                }
            } else if let onlyReader {
                for e in try store.auditTrail(reader: onlyReader) { emit(e) }
            } else {
                try store.forEachEvent(from: 1) { e in emit(e); return true }
            }
            flush()
        }
    }

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

/// The payload of an event for the audit listing, as one JSON object: the export's `data`, or for
/// an event this build does not know, its size and stored bytes (`{"rawPayload":"<base64>","bytes":N}`).
func auditFields(_ e: EventEnvelope) -> String {
    if case .unknown(let unknown) = e.event {
        return "{\"bytes\":\(unknown.payload.count),\"rawPayload\":\"\(Data(unknown.payload).base64EncodedString())\"}"
    }
    let line = JSONEventCodec.encode(e)
    // Re-encode only the `data` object of the export line; a known event always has one.
    guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
          let data = object["data"], JSONSerialization.isValidJSONObject(data),
          let bytes = try? JSONSerialization.data(withJSONObject: data, options: [.sortedKeys, .withoutEscapingSlashes]) else {
        return "null"
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// The local wall-clock time of an instant in its zone with its offset ("2026-03-01T21:30:00+09:00"),
/// for the audit listing.
func localTimeText(_ t: Timestamp, _ zone: ZoneID) -> String {
    let offset = zone.timeZone.secondsFromGMT(for: t.date)
    let shifted = Timestamp(microseconds: t.microseconds + Int64(offset) * 1_000_000).description
    let sign = offset >= 0 ? "+" : "-"
    return String(shifted.prefix(19)) + String(format: "%@%02d:%02d", sign, abs(offset) / 3600, abs(offset) % 3600 / 60)
}
