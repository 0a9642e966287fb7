import Foundation
import ReadingEvents

/// Builds an import: each book's commands run through the decide step (``BookCommand/decide(for:in:at:)``)
/// on that book's state, at the instant and in the zone the event happened, so every envelope obeys
/// the same rules as one the reader recorded by hand. A rejected command is skipped into the report.
///
/// Identifiers are derived, never random: a book's ID from (reader, source, row identity), an
/// event's ID from (reader, source, row identity, role). Importing the same file again gives the
/// same IDs, which the store skips.
struct ImportPlan {
    let options: ImportOptions
    var report: ImportReport
    /// Each event, staged on disk with its book's number in source order and its order key
    /// (see ``result()``).
    private let staging: StagedEvents.Writer
    /// Each book's number in source order and the running latest instant of its events (its
    /// order key): one small entry a book.
    private var bookOrder: [BookID: (number: Int32, key: Int64)] = [:]
    /// The first row of each source identity seen (by a 128-bit name hash of the identity, not
    /// its text, so an entry stays small): its line and a hash of its fields.
    private var firstRows: [UUID: (line: Int32, fields: Int)] = [:]

    init(source: ImportSource, options: ImportOptions) {
        self.options = options
        report = ImportReport(source: source)
        staging = StagedEvents.Writer(in: options.temporaryDirectory)
    }

    /// One book being imported: its identity, ID and decide-step state.
    struct Book {
        let identity: String
        let id: BookID
        let line: Int?
        var state = BookState()
        var events = 0
        var title = ""
    }

    func book(identity: String, line: Int?) -> Book {
        Book(identity: identity, id: BookID(derivedUUID(["book", identity])), line: line)
    }

    /// A derived UUID for `parts` of this reader and source.
    func derivedUUID(_ parts: [String]) -> UUID {
        DerivedID.uuid([options.reader.description, report.source.rawValue] + parts)
    }

    /// Runs `command` for `book` at `instant`; the event IDs come from the book's identity and
    /// `role`. Returns false (and reports the row) when the decide step rejects it.
    @discardableResult
    mutating func run(_ command: BookCommand, _ book: inout Book, role: String, at instant: Timestamp, line: Int?) -> Bool {
        let context = CommandContext(reader: options.reader, occurredAt: instant, timeZone: options.zone.identifier,
                                     recordedAt: options.importedAt,
                                     commandID: EventID(derivedUUID(["event", book.identity, role])))
        do {
            let events = try command.decide(for: book.id, in: book.state, at: instant)
            let made = try context.envelopes(for: events)
            var order = bookOrder[book.id] ?? (number: Int32(truncatingIfNeeded: bookOrder.count), key: Int64.min)
            for envelope in made {
                book.state.apply(envelope.event, occurredAt: envelope.occurredAt)
                report.eventsByType[envelope.type.tag, default: 0] += 1
                order.key = max(envelope.occurredAt.microseconds, order.key)
                staging.append(envelope, book: Int(order.number), key: Timestamp(microseconds: order.key))
            }
            bookOrder[book.id] = order
            book.events += made.count
            return true
        } catch {
            report.skipped.append(.init(line: line ?? book.line ?? 0, reason: "\(book.title.isEmpty ? book.identity : book.title): \(error)"))
            return false
        }
    }

    /// Records a finished book in the report.
    mutating func finish(_ book: Book) {
        guard book.state.isInLibrary else { return }
        report.bookCount += 1
        guard options.listsBooks else { return }
        report.books.append(.init(book: book.id, identity: book.identity, title: book.title, status: book.state.status,
                                  events: book.events))
    }

    /// Whether this row is the first with `identity` (a Goodreads `Book Id` names one book). A
    /// later row with the same fields is reported and left out (imported once); one with other
    /// fields is skipped into the report, naming the column and both lines, never merged into the
    /// first row's book.
    mutating func isFirstRow(identity: String, column: String, fields: [String], line: Int) -> Bool {
        var hasher = Hasher()
        hasher.combine(fields)
        let hash = hasher.finalize()
        let name = DerivedID.uuid([column, identity])
        guard let first = firstRows[name] else {
            firstRows[name] = (Int32(truncatingIfNeeded: line), hash)
            return true
        }
        if first.fields == hash {
            warn("\(column) \(identity) repeats line \(first.line) exactly; imported once", line: line)
        } else {
            skip("\(column): \(identity) is on line \(first.line) already, with other data; this row is not imported (a \(column) names one book: correct or remove one of the rows)", line: line)
        }
        return false
    }

    mutating func warn(_ message: String, line: Int?) {
        report.warnings.append(.init(line: line, message: message))
    }

    mutating func skip(_ reason: String, line: Int) {
        report.skipped.append(.init(line: line, reason: reason))
    }

    /// Reads CSV as `source`, streaming: refuses it unless the `required` columns are there,
    /// then imports it row by row with `importRow` as the rows are parsed (no table of rows is
    /// kept, and a file is read a piece at a time). Progress is reported in lines.
    static func readCSV(_ csv: CSVTable.Source, source: ImportSource, describedAs name: String, required: [String],
                        options: ImportOptions, progress: ImportProgress?,
                        row importRow: (CSVTable.Row, CSVTable, inout ImportPlan) -> Void) throws(ImportError) -> ImportResult {
        var plan = ImportPlan(source: source, options: options)
        try CSVTable.enumerate(csv, header: { table throws(ImportError) in
            guard table.hasColumns(required) else {
                throw .wrongFormat(source: source,
                                   expected: "\(name) with the columns \(required.joined(separator: ", ")); found the header \(ReportText.quoted(table.header.joined(separator: ",")))")
            }
        }, rows: { table, row, lines in
            plan.report.rows += 1
            importRow(row, table, &plan)
            progress?(row.line, lines)
        })
        return try plan.result()
    }

    /// The events in time order across books, each book's own order kept: sorted by the running
    /// latest instant of their book's events so far, then book, then order within the book. So a
    /// history imported from an older snapshot and then a newer one lands in the same log order
    /// (the same positions) as the newer one alone.
    func result() throws(ImportError) -> ImportResult {
        let staged = try staging.finish { a, b in (a.key, a.book, a.offset) < (b.key, b.book, b.offset) }
        return ImportResult(staged: staged, report: report)
    }

    // MARK: Local dates and instants

    /// The instant that stands for a whole local day: noon of `day` in the reader's zone, so the
    /// day survives any zone offset (-12 ... +14) and any DST jump.
    func noon(of day: LocalDate) -> Timestamp {
        LocalDays.instant(of: day, secondOfDay: 12 * 3600, in: options.zone)
    }
}

/// Local calendar arithmetic through the reader's zone (never the machine's).
enum LocalDays {
    /// The instant of `secondOfDay` on `day` in `zone`.
    static func instant(of day: LocalDate, secondOfDay: Int, in zone: ZoneID) -> Timestamp {
        let naive = Int64(day.dayNumber) * 86_400 + Int64(secondOfDay)
        let tz = zone.timeZone
        // The offset at the naive instant, corrected once for a DST change between the two.
        let first = Int64(tz.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(naive))))
        let offset = Int64(tz.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(naive - first))))
        return Timestamp(microseconds: (naive - offset) * 1_000_000)
    }

    /// The local day and hour of an instant (in seconds) in `zone`.
    static func local(_ seconds: Int64, in zone: ZoneID) -> (day: LocalDate, hour: Int) {
        let offset = Int64(zone.timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(seconds))))
        let local = seconds + offset
        var day = local / 86_400, second = local % 86_400
        if second < 0 { second += 86_400; day -= 1 }
        return (LocalDate(dayNumber: Int(day)), Int(second / 3600))
    }

    /// Parses a CSV date: `2024/12/31`, `2024-12-31` or `2024/1/5`; nil for anything else.
    static func parse(_ text: String) -> LocalDate? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let parts = trimmed.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "/" || $0 == "-" })
        guard parts.count == 3, parts[0].count == 4, let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]),
              parts[1].count <= 2, parts[2].count <= 2 else { return nil }
        return try? LocalDate(year: y, month: m, day: d)
    }
}

/// Name-based UUIDs: FNV-1a (128-bit) over the parts, each followed by a 0 separator byte, with
/// the version nibble set to 8 (custom) and the RFC 4122 variant. Stable across runs, machines
/// and versions of this package, which is what idempotent re-import needs.
enum DerivedID {
    static func uuid(_ parts: [String]) -> UUID {
        // FNV-1a 128: offset basis 0x6c62272e07bb014262b821756295c58d, prime 2^88 + 0x13B.
        var hi: UInt64 = 0x6c62_272e_07bb_0142, lo: UInt64 = 0x62b8_2175_6295_c58d
        func mix(_ byte: UInt8) {
            lo ^= UInt64(byte)
            let (carry, low) = lo.multipliedFullWidth(by: 0x13B)
            hi = carry &+ hi &* 0x13B &+ (lo << 24)
            lo = low
        }
        for part in parts {
            for byte in part.utf8 { mix(byte) }
            mix(0)
        }
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<8 {
            bytes[i] = UInt8(truncatingIfNeeded: hi >> (56 - 8 * UInt64(i)))
            bytes[8 + i] = UInt8(truncatingIfNeeded: lo >> (56 - 8 * UInt64(i)))
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x80
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
