import LMDB
import Projections
import ReadingEvents

/// Decoded views as this process's last write transaction left them: book views and reader views,
/// the records every fold step reads and writes. The next write transaction folds an event into a
/// book without reading and decoding the book's records again (its summary, its decision record and
/// its detail chunks), nor the reader's record.
///
/// The memo is used only while it is provably current:
/// - LMDB numbers committed write transactions consecutively across every process
///   (``LMDB/WriteTransaction/id``). The memo remembers the ID of the last committed transaction
///   its views are current for (the session's own, or the one before it when the session's
///   transaction wrote nothing, since LMDB then commits no new one); a write transaction whose ID
///   is not the next one finds that someone else (another process, or a write path of this one
///   that does not go through the memo) committed in between, and empties the memo before
///   reading anything.
/// - It remembers the views' generation: a transaction folding into another generation empties it.
/// - What a transaction reads and writes is kept in a ``Session`` attached to that transaction and
///   moved into the memo only after its commit succeeded; an aborted transaction (or a run that
///   the environment repeats after growing the map) leaves the memo as it was.
/// - A transaction that writes views another way calls ``Session/invalidate()`` first; its commit
///   then empties the memo.
///
/// It holds at most ``capacity`` book views and as many reader views, and drops the least
/// recently used ones beyond that.
///
/// `Sendable`: its state is behind a lock (`Locked`); a ``Session`` belongs to one transaction.
final class ViewMemo: Sendable {
    /// The most book views kept (and the most reader views).
    let capacity: Int
    /// The most book views one transaction's session remembers (eight times ``capacity``).
    var sessionLimit: Int { capacity * 8 }
    private let state: Locked<State>

    private struct State {
        /// The ID of the last committed write transaction the views are current for (nil: none).
        var transaction: UInt64?
        var generation = -1
        var books: [BookKey: Entry<BookView>] = [:]
        var readers: [ReaderID: Entry<ReaderView>] = [:]
        /// A use counter, for least-recently-used eviction.
        var clock: UInt64 = 0

        mutating func removeViews() {
            books.removeAll(keepingCapacity: true)
            readers.removeAll(keepingCapacity: true)
        }
    }

    /// A book of a reader.
    fileprivate struct BookKey: Hashable {
        var reader: ReaderID
        var book: BookID
    }

    /// A view and when it was last used; a class, so that marking it used writes no view back.
    /// Only touched under the memo's lock.
    private final class Entry<Value> {
        let value: Value
        var used: UInt64
        init(_ value: Value, used: UInt64) { self.value = value; self.used = used }
    }

    init(capacity: Int = 256) {
        self.capacity = capacity
        state = Locked(State())
    }

    /// The session of `txn` for views of `generation`: made at the transaction's first use (when
    /// the memo is checked, and emptied unless the last commit was the one it is current for);
    /// the same session for every later use in the same transaction.
    func session(_ txn: WriteTransaction, generation: Int) -> Session {
        let session = txn.attachment(ObjectIdentifier(self)) { () -> Session in
            let current = state.withLock { state -> Bool in
                let current = state.transaction.map { $0 + 1 == txn.id } == true && state.generation == generation
                if !current { state.removeViews() }
                return current
            }
            let session = Session(memo: self, generation: generation, current: current)
            // A transaction that wrote nothing leaves the last committed one as it was: the
            // views it read are those of transaction `id - 1`.
            let id = txn.id
            txn.afterCommit { [self] committed in install(session, transaction: committed ?? id - 1) }
            return session
        }
        if session.generation != generation { session.invalidate() }
        return session
    }

    /// Moves a committed transaction's views into the memo (or empties it, if the session was
    /// invalidated).
    private func install(_ session: Session, transaction: UInt64) {
        state.withLock { state in
            guard !session.isInvalid else {
                state = State()
                return
            }
            state.transaction = transaction
            state.generation = session.generation
            for (key, view) in session.books {
                state.clock += 1
                state.books[key] = Entry(view, used: state.clock)
            }
            for (key, view) in session.readers {
                state.clock += 1
                state.readers[key] = Entry(view, used: state.clock)
            }
            Self.evict(&state.books, capacity: capacity)
            Self.evict(&state.readers, capacity: capacity)
        }
    }

    /// Beyond `capacity`, down to three quarters of it (so that the sort runs once per many
    /// transactions), keeping the most recently used.
    private static func evict<Key: Hashable, Value>(_ entries: inout [Key: Entry<Value>], capacity: Int) {
        guard entries.count > capacity else { return }
        let keep = entries.sorted { $0.value.used > $1.value.used }.prefix(capacity * 3 / 4)
        entries = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
    }

    /// A book view the memo holds, marked as used.
    fileprivate func bookView(_ key: BookKey) -> BookView? {
        state.withLock { state in Self.use(state.books[key], clock: &state.clock) }
    }

    /// A reader view the memo holds, marked as used.
    fileprivate func readerView(_ reader: ReaderID) -> ReaderView? {
        state.withLock { state in Self.use(state.readers[reader], clock: &state.clock) }
    }

    /// The entry's view, the entry marked as used now.
    private static func use<Value>(_ entry: Entry<Value>?, clock: inout UInt64) -> Value? {
        guard let entry else { return nil }
        clock += 1
        entry.used = clock
        return entry.value
    }

    /// The views the memo holds, and the ID of the last committed transaction they are current
    /// for (for tests).
    var contents: (books: [BookView], readers: [ReaderID: ReaderView], transaction: UInt64?) {
        state.withLock { state in
            (state.books.values.map(\.value), state.readers.mapValues(\.value), state.transaction)
        }
    }

    /// What one write transaction read and wrote of book and reader views, moved into the memo
    /// at its commit.
    ///
    /// Not `Sendable`: it belongs to one write transaction, which is bound to one thread.
    final class Session {
        let generation: Int
        private unowned let memo: ViewMemo
        /// Whether the memo's views were current when the transaction began.
        private let current: Bool
        /// Views read or written in this transaction, as they are stored now.
        fileprivate var books: [BookKey: BookView] = [:]
        fileprivate var readers: [ReaderID: ReaderView] = [:]
        private(set) var isInvalid = false

        fileprivate init(memo: ViewMemo, generation: Int, current: Bool) {
            self.memo = memo
            self.generation = generation
            self.current = current
        }

        /// The stored view of a book as this transaction sees it, if the session or the memo
        /// knows it (`nil`: read the records).
        func bookView(reader: ReaderID, book: BookID) -> BookView? {
            guard !isInvalid else { return nil }
            let key = BookKey(reader: reader, book: book)
            if let view = books[key] { return view }
            return current ? memo.bookView(key) : nil
        }

        /// Whether the session or the memo holds the book's view (then its stored records are in
        /// the form ``LMDBViewStore/putBookView(_:)`` writes).
        func knowsBook(reader: ReaderID, book: BookID) -> Bool { bookView(reader: reader, book: book) != nil }

        /// The stored view of a reader as this transaction sees it, if the session or the memo
        /// knows it (`nil`: read the record).
        func readerView(_ reader: ReaderID) -> ReaderView? {
            guard !isInvalid else { return nil }
            if let view = readers[reader] { return view }
            return current ? memo.readerView(reader) : nil
        }

        /// Notes a book view as it is now stored: read from its records (in summary form) or just
        /// written. A transaction that touches more books than ``sessionLimit`` (a large import)
        /// stops remembering them, so its memory does not grow with the books: the session is
        /// invalidated (the rest of the transaction reads records, and its commit empties the memo).
        func note(_ view: BookView) {
            guard !isInvalid else { return }
            books[BookKey(reader: view.reader, book: view.book)] = view
            if books.count > memo.sessionLimit { invalidate() }
        }

        /// Notes a reader view as it is now stored: read from its record or just written.
        func note(reader: ReaderID, _ view: ReaderView) {
            guard !isInvalid else { return }
            readers[reader] = view
        }

        /// Marks the transaction as writing views outside the memo: it no longer answers, and the
        /// commit empties the memo.
        func invalidate() {
            isInvalid = true
            books = [:]
            readers = [:]
        }
    }
}
