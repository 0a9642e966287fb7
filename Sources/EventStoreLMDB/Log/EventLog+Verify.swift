import Foundation
import LMDB

extension EventLog {
    /// Walks every record in order, in chunks of `chunkSize` records (one short read transaction
    /// each), and reports every fault: checksums, position gaps and mismatches, hash-chain
    /// breaks, index and stream-version inconsistencies, and a head (meta) that disagrees with
    /// the last record. It never throws for damaged records; it reports them.
    ///
    /// - Parameter progress: called after each chunk with the last position walked.
    public func verify(chunkSize: Int = 4096, progress: ((UInt64) -> Void)? = nil) throws -> VerificationReport {
        let walker = ChainWalker()
        var next: UInt64 = 1
        while true {
            let reachedEnd = try environment.read { txn -> Bool in
                var count = 0
                var lastKey: UInt64?
                try txn.forEachRaw(events, from: BigEndianUInt64.encode(next), direction: .forward, prefix: nil) { key, value in
                    let position = try BigEndianUInt64.decode(key)
                    try walker.visit(position: position, bytes: value, log: self, txn: txn)
                    lastKey = position
                    count += 1
                    return count < chunkSize
                }
                if let lastKey { next = lastKey + 1 }
                guard count < chunkSize else { return false }
                try walker.finish(log: self, txn: txn)
                return true
            }
            progress?(walker.lastPosition)
            if reachedEnd { break }
        }
        return VerificationReport(recordCount: walker.recordCount, lastPosition: walker.lastPosition, faults: walker.faults)
    }
}

/// The state of one verification walk.
private final class ChainWalker {
    var faults: [ChainFault] = []
    var recordCount: UInt64 = 0
    var lastPosition: UInt64 = 0
    var previousHash = EventRecord.zeroHash
    var streamVersions: [StreamKey: UInt64] = [:]

    func fault(_ position: UInt64, _ kind: ChainFault.Kind, _ detail: String) {
        faults.append(ChainFault(position: position, kind: kind, detail: detail))
    }

    func visit(position: UInt64, bytes: UnsafeRawBufferPointer, log: EventLog, txn: ReadTransaction) throws {
        recordCount += 1
        if position != lastPosition + 1 {
            fault(position, .positionGap, "expected position \(lastPosition + 1), found \(position)")
        }
        lastPosition = position
        let hash = EventRecord.hash(bytes)
        defer { previousHash = hash }
        let event: RecordedEvent
        switch EventRecord.inspect(bytes, key: position) {
        case .success(let decoded):
            event = decoded
        case .failure(let damage):
            fault(position, damage.kind, damage.reason)
            return
        }
        if event.prevHash != previousHash {
            fault(position, .chainBreak, "prevHash does not match the hash of the record at position \(position - 1)")
        }
        let indexed = try txn.get(log.eventIDs, event.eventID)
        if indexed != position {
            fault(position, .eventIDIndex, "eventIDs has \(indexed.map(String.init) ?? "nothing") for \(event.eventID)")
        }
        let expectedVersion = (streamVersions[event.key] ?? 0) + 1
        if event.streamVersion != expectedVersion {
            fault(position, .streamVersion, "stream \(event.key) version \(event.streamVersion), expected \(expectedVersion)")
        }
        streamVersions[event.key] = event.streamVersion
        let streamIndexed = try txn.get(log.streamIndex, (event.key, event.streamVersion))
        if streamIndexed != position {
            fault(position, .streamIndex, "streamIndex has \(streamIndexed.map(String.init) ?? "nothing") for \(event.key) v\(event.streamVersion)")
        }
    }

    /// The checks that need the whole walk, in the transaction that saw its end.
    func finish(log: EventLog, txn: ReadTransaction) throws {
        let metaLast = try log.lastPosition(in: txn)
        if metaLast != lastPosition {
            fault(lastPosition, .head, "meta says the last position is \(metaLast), the log ends at \(lastPosition)")
        }
        let head = try txn.get(log.meta, EventLog.MetaKey.head) ?? EventRecord.zeroHash
        if head != previousHash {
            fault(lastPosition, .head, "meta's head hash is not the hash of the last record")
        }
        let idCount = try txn.count(log.eventIDs)
        if UInt64(idCount) != recordCount {
            fault(lastPosition, .eventIDIndex, "eventIDs has \(idCount) entries for \(recordCount) records")
        }
        let indexCount = try txn.count(log.streamIndex)
        if UInt64(indexCount) != recordCount {
            fault(lastPosition, .streamIndex, "streamIndex has \(indexCount) entries for \(recordCount) records")
        }
    }
}
