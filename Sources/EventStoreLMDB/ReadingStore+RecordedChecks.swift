import Foundation
import LMDB
import Projections
import ReadingEvents

extension ReadingStore {
    /// Checks envelopes made elsewhere before ``appendRecorded(_:)`` appends them, inside its write
    /// transaction: the stored envelope of a repeated event ID, and a book's page count, come from
    /// the log and the active views as of this transaction. Returns the event IDs already stored
    /// (each ID is looked up once, here), so the append takes sequence numbers only for new ones.
    func checkRecorded(_ envelopes: [EventEnvelope], _ txn: WriteTransaction) throws -> Set<EventID> {
        let views = try activeViews(txn)
        var stored = Set<EventID>()
        try RecordedBatch.check(
            envelopes,
            stored: { id in
                let envelope = try log.event(withID: id.uuid, in: txn).map(Self.envelope(of:))
                if envelope != nil { stored.insert(id) }
                return envelope
            },
            storedPageCount: { reader, book in try views.bookSummary(reader: reader, book: book)?.metadata.pageCount })
        return stored
    }
}
