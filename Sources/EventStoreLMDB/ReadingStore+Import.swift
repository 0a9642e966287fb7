import ReadingEvents

extension ReadingStore {
    /// What ``ReadingStore/importHistory(_:)`` did.
    ///
    /// `Sendable`: plain integers.
    public struct ImportOutcome: Sendable, Hashable {
        /// Events appended.
        public let added: Int
        /// Events skipped because their IDs were already stored (an earlier import of the same rows).
        public let alreadyStored: Int
    }

    /// Appends an imported history (envelopes from `ReadingImport`, or any other validated
    /// envelopes with deterministic IDs) in one write transaction, folded into the views like
    /// every append: all of it is committed or, on any error or a crash, nothing.
    ///
    /// Events whose IDs are already stored are skipped, so importing the same file twice adds
    /// nothing and a newer export adds only its new rows.
    @discardableResult
    public func importHistory(_ envelopes: [EventEnvelope]) throws -> ImportOutcome {
        let added = try appendRecorded(envelopes)
        return ImportOutcome(added: added, alreadyStored: envelopes.count - added)
    }
}
