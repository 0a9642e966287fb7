import Foundation
import LMDB

extension EventLog {
    /// Appends one event to `stream` in its own write transaction.
    ///
    /// - Returns: the outcome (one entry); if the event ID is already stored nothing is written and
    ///   the stored position is returned.
    /// - Throws: ``EventStoreError/wrongExpectedVersion(stream:expected:actual:)`` (nothing written),
    ///   ``EventStoreError/invalidStreamName(_:)``, ``EventStoreError/corruptRecord(position:reason:)``
    ///   or ``LMDBError``.
    @discardableResult
    public func append(_ event: NewEvent, to stream: String, expectedVersion: ExpectedVersion = .any) throws -> AppendResult {
        try append([StreamAppend(stream: stream, expectedVersion: expectedVersion, events: [event])])
    }

    /// Appends a batch to one stream, all or nothing, in its own write transaction.
    ///
    /// Idempotency: events whose ID is already stored (or repeated earlier in the batch) are not
    /// written again; their stored position is returned and ``AppendResult/Entry/isNew`` is false.
    /// The expected version is checked only when the batch has at least one new event, against
    /// the stream's version before the new events; so retrying a batch that was already
    /// appended succeeds whatever the stream's version is now.
    @discardableResult
    public func append(_ events: [NewEvent], to stream: String, expectedVersion: ExpectedVersion = .any) throws -> AppendResult {
        try append([StreamAppend(stream: stream, expectedVersion: expectedVersion, events: events)])
    }

    /// Appends to several streams, all or nothing, in its own write transaction.
    ///
    /// Each part is checked and written in order, so a stream named twice is checked the second
    /// time against the version the first part left. Any conflict writes nothing at all.
    @discardableResult
    public func append(_ parts: [StreamAppend]) throws -> AppendResult {
        let result = try environment.write { txn in try append(parts, in: txn) }
        if result.writtenCount > 0 { notifyObservers() }
        return result
    }

    /// Appends a batch to one stream inside the caller's write transaction, so the caller can
    /// write its own databases (read models, checkpoints) in the same commit.
    ///
    /// Same rules as the batch `append(_:to:expectedVersion:)`. If this throws, let the
    /// error leave the transaction closure (the transaction is then aborted): continuing
    /// after a failed append could commit a partial batch. After the transaction commits, call
    /// ``notifyObservers()`` so this process's observers wake at once.
    @discardableResult
    public func append(
        _ events: [NewEvent], to stream: String, expectedVersion: ExpectedVersion = .any, in txn: WriteTransaction
    ) throws -> AppendResult {
        try append([StreamAppend(stream: stream, expectedVersion: expectedVersion, events: events)], in: txn)
    }

    /// Appends a batch to the stream `key` inside the caller's write transaction: the form
    /// ``ReadingStore`` uses (no stream text). Same rules as ``append(_:to:expectedVersion:in:)``.
    @discardableResult
    public func append(
        _ events: [NewEvent], to key: StreamKey, expectedVersion: ExpectedVersion = .any, in txn: WriteTransaction
    ) throws -> AppendResult {
        try append([StreamAppend(key: key, expectedVersion: expectedVersion, events: events)], in: txn)
    }

    /// Appends to several streams inside the caller's write transaction (see
    /// ``append(_:to:expectedVersion:in:)``).
    @discardableResult
    public func append(_ parts: [StreamAppend], in txn: WriteTransaction) throws -> AppendResult {
        try append(parts, in: txn, idsCheckedNew: false)
    }

    /// ``append(_:in:)`` for a caller that has already checked, in `txn`, that every event ID of
    /// `parts` is new to the log and named once (`idsCheckedNew`: the store's append pipeline):
    /// the IDs are then not looked up again nor remembered across parts (a look-up and two hash
    /// operations an event, issue 37). The event-ID index is still written with
    /// `MDB_NOOVERWRITE`, so an ID that the check let through wrongly fails the append with
    /// ``EventStoreError/invalidArgument(field:detail:)`` (field `eventID`) and nothing is
    /// written, never a second record under one ID.
    func append(_ parts: [StreamAppend], in txn: WriteTransaction, idsCheckedNew: Bool) throws -> AppendResult {
        // Never trust a cache across transactions: another process may have appended.
        var last = try lastPosition(in: txn)
        var head = try txn.get(meta, MetaKey.head) ?? EventRecord.zeroHash
        var handled: [UUID: AppendResult.Entry] = [:]
        var entries: [AppendResult.Entry] = []
        entries.reserveCapacity(parts.reduce(0) { $0 + $1.events.count })
        // Each stream's version as this append left it: only this append writes the stream index
        // in `txn`, so a stream named by many parts (a batch of one-event parts to one book) is
        // looked up in the index once (a cursor's walk, about 4,900 instructions an event before).
        var versions: [StreamKey: UInt64?] = [:]
        versions.reserveCapacity(parts.count)  // at most one a part: never rehashed as it fills
        // The stream index key of the event being written: the stream's key, then its version.
        var indexKey: [UInt8] = []

        for part in parts {
            let streamBytes = try part.key.encoded()
            // First pass: which events are already stored (or earlier in this append)?
            var known: [Int: AppendResult.Entry] = [:]
            var pendingIDs = Set<UUID>()
            for (index, event) in part.events.enumerated() where !idsCheckedNew {
                if let entry = handled[event.eventID] {
                    known[index] = AppendResult.Entry(
                        eventID: event.eventID, position: entry.position, streamVersion: entry.streamVersion, isNew: false)
                } else if let position = try txn.get(eventIDs, event.eventID) {
                    let stored = try self.event(at: position, in: txn)
                    known[index] = AppendResult.Entry(
                        eventID: event.eventID, position: position, streamVersion: stored?.streamVersion ?? 0, isNew: false)
                } else if part.events.count > 1, !pendingIDs.insert(event.eventID).inserted {
                    continue  // repeated inside this part: resolved in the second pass
                }
            }
            let hasNew = known.count < part.events.count
            var version: UInt64?
            if let noted = versions[part.key] { version = noted } else {
                version = try streamVersion(encoded: streamBytes, in: txn)
            }
            if hasNew && !part.expectedVersion.isSatisfied(by: version) {
                throw EventStoreError.wrongExpectedVersion(
                    stream: part.key.description, expected: part.expectedVersion, actual: version)
            }
            // Second pass: write the new events in order.
            let partStart = entries.count
            for (index, event) in part.events.enumerated() {
                if let entry = known[index] {
                    entries.append(entry)
                    continue
                }
                if !idsCheckedNew, let entry = handled[event.eventID] {
                    entries.append(AppendResult.Entry(
                        eventID: event.eventID, position: entry.position, streamVersion: entry.streamVersion, isNew: false))
                    continue
                }
                last += 1
                let streamVersion = (version ?? 0) + 1
                version = streamVersion
                let record = EventRecord.encode(
                    position: last, streamVersion: streamVersion, eventID: event.eventID, streamKey: streamBytes,
                    payload: event.payload, prevHash: head)
                indexKey.removeAll(keepingCapacity: true)
                indexKey.append(contentsOf: streamBytes)
                BigEndianUInt64.encode(streamVersion, into: &indexKey)
                // The position (the events key, and the value of both indexes) and the event ID
                // from the stack: no array each.
                try withUnsafeBytes(of: last.bigEndian) { position in
                    try record.withUnsafeBytes { try txn.putRaw(events, position, $0, flags: .append) }
                    do {
                        try withUnsafeBytes(of: event.eventID.uuid) { try txn.putRaw(eventIDs, $0, position, flags: .noOverwrite) }
                    } catch let error as LMDBError where idsCheckedNew && error.kind == .keyExists {
                        throw EventStoreError.invalidArgument(
                            field: "eventID", detail: "event \(event.eventID) was checked new but the log holds it")
                    }
                    try indexKey.withUnsafeBytes { try txn.putRaw(streamIndex, $0, position, flags: .noOverwrite) }
                }
                head = EventRecord.hash(record)
                let entry = AppendResult.Entry(eventID: event.eventID, position: last, streamVersion: streamVersion, isNew: true)
                if !idsCheckedNew { handled[event.eventID] = entry }
                entries.append(entry)
            }
            versions[part.key] = .some(version)
            // Only this part's entries: earlier parts are already in `handled` (keeps a
            // many-part append linear).
            for entry in entries[partStart...] where !idsCheckedNew && handled[entry.eventID] == nil {
                handled[entry.eventID] = entry
            }
        }
        if entries.contains(where: \.isNew) {
            try txn.put(meta, MetaKey.last, BigEndianUInt64.encode(last))
            try txn.put(meta, MetaKey.head, head)
        }
        return AppendResult(entries: entries, lastPosition: last)
    }

    /// Wakes this process's observers (``events(after:pollInterval:)``) at once. The convenience
    /// appends call it; call it after committing a transaction that used an `in:` append.
    public func notifyObservers() {
        appendSignals.signalAll()
    }
}
