import Foundation
import Projections
import ReadingEvents

extension ReadingStore {
    /// The latest event of `reader` in log order, or nil when the reader has none.
    public func latestEvent(of reader: ReaderID) throws -> EventEnvelope? {
        let record = try log.environment.read { txn -> RecordedEvent? in
            var position: UInt64?
            try txn.forEach(readerIndex, direction: .backward, prefix: ReaderIDKey.encode(reader)) { key, _ in
                position = key.1
                return false
            }
            guard let position else { return nil }
            return try log.event(at: position, in: txn)
        }
        return try record.map(Self.envelope(of:))
    }

    /// The number of events of `reader`.
    public func eventCount(of reader: ReaderID) throws -> Int {
        try withViews { try $0.readerView(reader: reader)?.eventCount ?? 0 }
    }
}
