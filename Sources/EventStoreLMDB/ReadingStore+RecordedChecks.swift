import Foundation
import LMDB
import Projections
import ReadingEvents

extension ReadingStore {
    /// Checks envelopes made elsewhere before ``appendRecorded(_:)`` appends them, inside its write
    /// transaction: the stored envelope of a repeated event ID, and a book's page count, come from
    /// the log and the active views as of this transaction.
    func checkRecorded(_ envelopes: [EventEnvelope], _ txn: WriteTransaction) throws {
        let views = LMDBViewStore(txn: txn, tables: generations[try activeGeneration(txn)])
        try RecordedBatch.check(
            envelopes,
            stored: { id in try log.event(withID: id.uuid, in: txn).map(Self.envelope(of:)) },
            storedPageCount: { reader, book in try views.bookView(reader: reader, book: book)?.metadata.pageCount })
    }
}
