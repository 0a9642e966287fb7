/// ``RatingSet`` as schema version 1 stored it: whole stars as an integer. No longer written;
/// read and upcast by ``EventUpcaster``.
///
/// `Sendable`: an identifier and an integer.
public struct RatingSetV1: Hashable, Sendable {
    /// The book.
    public var book: BookID
    /// Whole stars, 1 ... 5.
    public var rating: Int
    /// Creates the payload.
    public init(book: BookID, rating: Int) { self.book = book; self.rating = rating }
}

/// A payload as a decoder read it, at the schema version it was stored with, before upcasting.
///
/// `Sendable`: every payload is.
public enum StoredPayload: Hashable, Sendable {
    /// A payload at its type's current schema version, or an event this build does not know.
    case event(ReadingEvent)
    /// ``RatingSet`` schema version 1.
    case ratingSetV1(RatingSetV1)
}

/// The one path from a stored (type tag, schema version, payload) to the current event, used by
/// every decoder (``BinaryEventCodec`` and ``JSONEventCodec``), so an old event reads the same from
/// the store, from an export and from an import.
///
/// Versions it reads:
/// - every type of ``EventType/known`` at its current schema version, unchanged;
/// - `RatingSet` v1 (whole stars 1 ... 5) as `RatingSet` v2 with `quarters = stars × 4`;
/// - anything else (an unknown tag, or a version newer than this build's) as
///   ``ReadingEvent/unknown(_:)``, kept as stored.
///
/// `Sendable`: an uninhabited namespace.
public enum EventUpcaster {
    /// How a decoder must read a payload stored with a given type tag and schema version.
    ///
    /// `Sendable`: a plain enum.
    public enum StoredForm: Hashable, Sendable {
        /// The current schema version of a known type.
        case current(EventType)
        /// ``RatingSetV1``.
        case ratingSetV1
        /// A type or version this build does not know: keep the payload as ``UnknownEvent``.
        case unknown
    }

    /// The form of a payload stored as `tag` at `schemaVersion`.
    public static func form(ofType tag: String, schemaVersion: Int) -> StoredForm {
        if let kind = EventKind(tag: tag) {
            if schemaVersion == kind.type.schemaVersion { return .current(kind.type) }
            if kind == .ratingSet, schemaVersion == 1 { return .ratingSetV1 }
        }
        return .unknown
    }

    /// Maps a payload stored as `tag` at `schemaVersion` to the current event, checking that the
    /// three agree; throws ``EventDecodingError`` (`type`, `schemaVersion` or `data.…`) otherwise.
    ///
    /// An ``UnknownEvent`` passes through unchanged, provided its tag and version are indeed ones
    /// this build cannot read.
    public static func upcast(type tag: String, schemaVersion: Int,
                              payload: StoredPayload) throws(EventDecodingError) -> ReadingEvent {
        switch payload {
        case .event(.unknown(let unknown)):
            guard unknown.type == tag, unknown.schemaVersion == schemaVersion else {
                throw .inconsistent("type", "the unknown payload is \(unknown.type)@\(unknown.schemaVersion), the envelope says \(tag)@\(schemaVersion)")
            }
            guard case .unknown = form(ofType: tag, schemaVersion: schemaVersion) else {
                throw .missing("data", "\(tag)@\(schemaVersion) is a known type but has no payload")
            }
            return .unknown(unknown)
        case .event(let event):
            let type = event.type
            guard type.tag == tag else {
                throw .inconsistent("type", "the type tag is \(tag) but the payload is \(type.tag)")
            }
            guard type.schemaVersion == schemaVersion else {
                throw .inconsistent("schemaVersion", "\(tag) payload is version \(type.schemaVersion), the envelope says \(schemaVersion)")
            }
            return event
        case .ratingSetV1(let v1):
            guard tag == EventType.ratingSet.tag else {
                throw .inconsistent("type", "the type tag is \(tag) but the payload is RatingSet")
            }
            guard schemaVersion == 1 else {
                throw .inconsistent("schemaVersion", "RatingSet v1 payload, the envelope says \(schemaVersion)")
            }
            guard (1...5).contains(v1.rating) else {
                throw .invalid("data.rating", .outOfRange, "\(v1.rating) whole stars is outside 1 ... 5")
            }
            let rating = try DecodingChecks.rating(quarters: Int64(v1.rating * 4), "data.rating")
            return .ratingSet(RatingSet(book: v1.book, rating: rating))
        }
    }
}
