import LMDB
import ReadingEvents

// Format migration: a log of an older format is rewritten to the current one when a store is
// opened writable (``ReadingStore/open(at:dayStartHour:replica:options:)`` calls `migrate` in the
// transaction that checks the format). Views of an older views version are rebuilt at open by
// `ReadingStore`'s open itself (`viewsVersion`).

extension ReadingStore {
    /// Migrates a log of format 1, 2 or 3 to the current format inside `txn` (one transaction:
    /// all of it or nothing):
    ///
    /// - from formats 1 and 2, in one pass over the records, every record is rewritten in the
    ///   current layout (its stream as a binary ``StreamKey``), the hash chain and checksums are
    ///   recomputed, and `streamIndex` is rebuilt with binary keys; from format 1 (no origins)
    ///   each payload also gets its origin (stamp 0, this replica, sequence = its position), which
    ///   keeps the old log order as the canonical order, and the origins index is filled;
    /// - from every older format (format 4: derived, not stored), the `streams` table is emptied
    ///   (a stream's version is its last `streamIndex` key) and this replica's own entry leaves
    ///   `sync.vector` (its head is its last origin); the stored clock stays (it is not behind
    ///   any stamp held).
    ///
    /// Then the format record is set to the current format.
    static func migrate(log: EventLog, from format: UInt32, sync: SyncTables, replica: ReplicaID, _ txn: WriteTransaction) throws {
        if format <= 2 { try rewriteRecords(log: log, addingOrigins: format <= 1, sync: sync, replica: replica, txn) }
        try txn.removeAll(log.streams)
        try txn.delete(sync.vector, replica)
        try txn.put(log.meta, EventLog.MetaKey.format, BigEndianUInt32.encode(EventLog.formatVersion))
    }

    /// The record pass of ``migrate(log:from:sync:replica:_:)`` for formats 1 and 2.
    fileprivate static func rewriteRecords(log: EventLog, addingOrigins addOrigins: Bool, sync: SyncTables, replica: ReplicaID,
                                       _ txn: WriteTransaction) throws {
        let last = try log.lastPosition(in: txn)
        try txn.removeAll(log.streamIndex)
        var head = EventRecord.zeroHash
        var position: UInt64 = 0
        while position < last {
            var records: [RecordedEvent] = []
            try txn.forEachRaw(log.events, from: BigEndianUInt64.encode(position + 1), direction: .forward, prefix: nil) { key, value in
                let position = try BigEndianUInt64.decode(key)
                switch EventRecord.inspectLegacy(value, key: position) {
                case .success(let record): records.append(record)
                case .failure(let damage): throw EventStoreError.corruptRecord(position: position, reason: damage.reason)
                }
                return records.count < EventLog.readChunkSize
            }
            guard !records.isEmpty else { break }
            for record in records {
                var payload = record.payload
                if addOrigins {
                    var envelope = try envelope(of: record)
                    envelope.origin = EventOrigin(stamp: 0, replica: replica, sequence: record.position)
                    payload = BinaryEventCodec.encode(envelope)
                    try txn.put(sync.origins, (replica, record.position), (record.position, 0))
                }
                let streamBytes = try record.key.encoded()
                let bytes = EventRecord.encode(
                    position: record.position, streamVersion: record.streamVersion, eventID: record.eventID,
                    streamKey: streamBytes, payload: payload, prevHash: head)
                try txn.putRaw(log.events, BigEndianUInt64.encode(record.position), bytes, flags: [])
                try txn.putRaw(log.streamIndex, streamBytes + BigEndianUInt64.encode(record.streamVersion),
                               BigEndianUInt64.encode(record.position), flags: .noOverwrite)
                head = EventRecord.hash(bytes)
            }
            position = records.last!.position
        }
        if last > 0 { try txn.put(log.meta, EventLog.MetaKey.head, head) }
    }
}
