import Foundation

/// The value rules both decoders apply, in one place, so the binary and JSON forms accept exactly
/// the same events. Each check names the field it was given; none does Foundation work on the
/// common path (the binary decoder runs them for every event).
enum DecodingChecks {
    /// The largest page position, page number or page count (``BookMetadata/maxPageCount``).
    static let pageRange: ClosedRange<Int64> = 0...Int64(BookMetadata.maxPageCount)
    /// Day numbers of 0001-01-01 ... 9999-12-31, the dates ``LocalDate`` can hold.
    static let dayNumberRange: ClosedRange<Int64> = -719_162...2_932_896

    @inline(__always)
    static func instant(_ microseconds: Int64, _ field: String) throws(EventDecodingError) -> Timestamp {
        guard microseconds >= Timestamp.earliestAllowed.microseconds,
              microseconds < Timestamp.latestAllowed.microseconds else {
            throw .invalid(field, .outOfRange,
                           "\(Timestamp(microseconds: microseconds)) is outside 1900-01-01 ..< 2200-01-01")
        }
        return Timestamp(microseconds: microseconds)
    }

    /// A page position (or page number) 0 ... 100,000.
    @inline(__always)
    static func page(_ value: Int64, _ field: String) throws(EventDecodingError) -> Int {
        guard pageRange.contains(value) else {
            throw .invalid(field, .outOfRange, "\(value) is outside 0 ... \(BookMetadata.maxPageCount)")
        }
        return Int(value)
    }

    /// A session length in seconds, 0 ... ``Limits/sessionSeconds``.
    static func duration(_ value: Int64, _ field: String) throws(EventDecodingError) -> Int {
        guard (0...Int64(Limits.sessionSeconds)).contains(value) else {
            throw .invalid(field, .outOfRange, "\(value) seconds is outside 0 ... \(Limits.sessionSeconds)")
        }
        return Int(value)
    }

    /// A read-through number, from 1.
    static func readThrough(_ value: Int64, _ field: String) throws(EventDecodingError) -> Int {
        guard value >= 1, value <= Int64(Int32.max) else {
            throw .invalid(field, .outOfRange, "read-through \(value) is outside 1 ... \(Int32.max)")
        }
        return Int(value)
    }

    /// A schema version, from 1.
    static func schemaVersion(_ value: Int64, _ field: String) throws(EventDecodingError) -> Int {
        guard value >= 1, value <= Int64(UInt32.max) else {
            throw .invalid(field, .outOfRange, "schema version \(value) is outside 1 ... \(UInt32.max)")
        }
        return Int(value)
    }

    /// A calendar date given as days since 1970-01-01.
    static func date(dayNumber value: Int64, _ field: String) throws(EventDecodingError) -> LocalDate {
        guard dayNumberRange.contains(value) else {
            throw .invalid(field, .outOfRange, "day number \(value) is outside 0001-01-01 ... 9999-12-31")
        }
        return LocalDate(dayNumber: Int(value))
    }

    /// A rating in quarter stars, 1 ... 20.
    static func rating(quarters value: Int64, _ field: String) throws(EventDecodingError) -> Rating {
        guard (1...20).contains(value) else {
            throw .invalid(field, .outOfRange, "\(value) quarter stars is outside 1 ... 20 (0.25 ... 5.0 stars)")
        }
        do { return try Rating(quarters: Int(value)) } catch { throw EventDecodingError(error, under: "data.") }
    }

    /// A text of 1 ... `limit` characters and at most ``Limits/utf8Bytes(forCharacters:)`` bytes
    /// that is not only whitespace.
    @inline(__always)
    static func text(_ value: String, limit: Int, _ field: String) throws(EventDecodingError) -> String {
        // A character has at least one UTF-8 byte, so a short text needs no grapheme count.
        let utf8Count = value.utf8.count
        if utf8Count > limit {
            // The byte limit first (``Limits/utf8Bytes(forCharacters:)``): no grapheme count of megabytes.
            let most = Limits.utf8Bytes(forCharacters: limit)
            guard utf8Count <= most else {
                throw .invalid(field, .tooLong, "the text has \(utf8Count) UTF-8 bytes, at most \(most) are allowed (\(Limits.bytesPerCharacter) per character of its limit of \(limit) characters)")
            }
            let characters = value.count
            guard characters <= limit else {
                throw .invalid(field, .tooLong, "the text has \(characters) characters, at most \(limit) are allowed")
            }
        }
        // Stops at the first non-whitespace scalar: usually the first.
        guard value.unicodeScalars.contains(where: { !$0.properties.isWhitespace }) else {
            throw .invalid(field, .empty, "the text is empty or only whitespace")
        }
        return value
    }

    /// An optional text of at most `limit` characters and ``Limits/utf8Bytes(forCharacters:)``
    /// bytes (the limits of ``Limits``, as commands apply them).
    @inline(__always)
    static func limited(_ value: String?, limit: Int, _ field: String) throws(EventDecodingError) -> String? {
        guard let value, value.utf8.count > limit else { return value }
        do { try ValueRules.length(value, field: field, limit: limit) } catch {
            throw EventDecodingError(field: field, problem: .invalid, rule: error.rule, detail: error.detail)
        }
        return value
    }

    /// An optional theme name of at most ``Limits/themeLength`` characters.
    @inline(__always)
    static func theme(_ value: String?, _ field: String) throws(EventDecodingError) -> Theme? {
        try limited(value, limit: Limits.themeLength, field).map(Theme.init(rawValue:))
    }

    /// A type tag (``EventType/checkTag(_:schemaVersion:)``, without the version).
    static func typeTag(_ tag: String, _ field: String) throws(EventDecodingError) -> String {
        guard !tag.isEmpty else { throw .missing(field, "is empty") }
        do { try EventType.checkTag(tag) } catch {
            throw EventDecodingError(field: field, problem: .invalid, rule: error.rule, detail: error.detail)
        }
        return tag
    }

    /// A time zone identifier from the store: non-empty, at most 255 bytes, printable ASCII.
    /// Not looked up in the tz database (it was checked when the event was appended, and a lookup
    /// per event is slow); the JSON decoder checks it for real.
    @inline(__always)
    static func storedZone(_ value: String, _ field: String) throws(EventDecodingError) -> ZoneID {
        var printable = !value.isEmpty
        if printable {
            var copy = value
            printable = copy.withUTF8 { bytes in
                guard bytes.count <= 255 else { return false }
                var ok = true
                for byte in bytes { ok = ok && byte > 0x20 && byte < 0x7F }
                return ok
            }
        }
        guard printable else {
            throw .invalid(field, .unknownTimeZone, "\"\(value)\" is not an IANA time zone identifier")
        }
        return ZoneID(unchecked: value)
    }

    /// A home-list order: no book twice.
    static func distinctBooks(_ books: [BookID], _ field: String) throws(EventDecodingError) -> [BookID] {
        if books.count > 1 {
            var seen = Set<BookID>(minimumCapacity: books.count)
            for book in books where !seen.insert(book).inserted {
                throw .invalid(field, .duplicateElement, "book \(book) is listed twice")
            }
        }
        return books
    }

    /// A yearly challenge that passes ``ChallengeSet/validated()`` (values outside `Int` are out of range too).
    static func challenge(year: Int64, books: Int64?, pages: Int64?) throws(EventDecodingError) -> ChallengeSet {
        func small(_ v: Int64) -> Int { Int(clamping: max(min(v, Int64(Int32.max)), Int64(Int32.min))) }
        do { return try ChallengeSet(year: small(year), books: books.map(small), pages: pages.map(small)).validated() }
        catch { throw EventDecodingError(error, under: "data.") }
    }

    /// A goal whose target is not before its start.
    static func goalDates(start: LocalDate, target: LocalDate) throws(EventDecodingError) {
        guard target >= start else {
            throw .invalid("data.targetDate", .targetBeforeStart, "target \(target) is before start \(start)")
        }
    }

    /// Metadata that passes ``BookMetadata/validated()``.
    static func metadata(_ value: BookMetadata) throws(EventDecodingError) -> BookMetadata {
        do { return try value.validated() } catch { throw EventDecodingError(error, under: "data.") }
    }

    /// An ISBN-13 given as text (the 13 digits).
    static func isbn(_ value: String, _ field: String) throws(EventDecodingError) -> ISBN13 {
        do { return try ISBN13(value) } catch {
            throw EventDecodingError(field: field, problem: .invalid, rule: error.rule, detail: error.detail)
        }
    }

    /// The latest stamp accepted: 2200-01-01 in microseconds, like instants (it also fits a
    /// signed 64-bit column).
    static let latestStamp = UInt64(Timestamp.latestAllowed.microseconds)

    /// An event's origin: all three fields or none (an event not yet stored, or a record of store
    /// format 1); a sequence from 1; a stamp before 2200-01-01.
    static func origin(replica: ReplicaID?, sequence: UInt64, stamp: UInt64) throws(EventDecodingError) -> EventOrigin? {
        guard let replica else {
            guard sequence == 0, stamp == 0 else {
                throw .inconsistent("replica", "an event with a sequence or a stamp must name its replica")
            }
            return nil
        }
        guard sequence > 0 else { throw .missing("sequence", "is required with a replica (1 or more)") }
        guard stamp < latestStamp else {
            throw .invalid("stamp", .outOfRange, "\(stamp) is not before 2200-01-01 (microseconds since 1970)")
        }
        return EventOrigin(stamp: stamp, replica: replica, sequence: sequence)
    }

    /// The stream must belong to the envelope's reader.
    static func stream(_ stream: StreamID, reader: ReaderID) throws(EventDecodingError) {
        guard stream.reader == reader else {
            throw .inconsistent("stream", "stream \(stream) belongs to another reader than \(reader)")
        }
    }
}

extension TaggedID {
    /// Builds an identifier from exactly 16 bytes of a buffer, without allocating.
    @inline(__always)
    init?(exactly16 raw: UnsafeRawBufferPointer) {
        guard raw.count == 16 else { return nil }
        self.init(UUID(uuid: raw.loadUnaligned(as: uuid_t.self)))
    }
}
