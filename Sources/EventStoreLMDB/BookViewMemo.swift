import LMDB
import Projections
import ReadingEvents

/// Decoded book views as this process's last write transaction left them, so that the next write
/// transaction folds an event into a book without reading and decoding the book's records again
/// (its summary, its decision record and one record per page entry, session, sentence and memo).
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
/// - A transaction that writes book views another way calls ``Session/invalidate()`` first; its
///   commit then empties the memo.
///
/// It holds at most ``capacity`` views and drops the least recently used ones beyond that.
///
/// `Sendable`: its state is behind a lock (`Locked`); a ``Session`` belongs to one transaction.
final class BookViewMemo: Sendable {
    /// The most book views kept.
    let capacity: Int
    private let state: Locked<State>

    private struct State {
        /// The ID of the last committed write transaction the views are current for (nil: none).
        var transaction: UInt64?
        var generation = -1
        var views: [Key: Entry] = [:]
        /// A use counter, for least-recently-used eviction.
        var clock: UInt64 = 0
    }

    /// A book of a reader.
    fileprivate struct Key: Hashable {
        var reader: ReaderID
        var book: BookID
    }

    private struct Entry {
        var view: BookView
        var used: UInt64
    }

    init(capacity: Int = 256) {
        self.capacity = capacity
        state = Locked(State())
    }

    /// The session of `txn` for views of `generation`: made at the transaction's first use (when
    /// the memo is checked, and emptied unless the previous commit was its own); the same session
    /// for every later use in the same transaction.
    func session(_ txn: WriteTransaction, generation: Int) -> Session {
        let session = txn.attachment(ObjectIdentifier(self)) { () -> Session in
            let current = state.withLock { state -> Bool in
                let current = state.transaction.map { $0 + 1 == txn.id } == true && state.generation == generation
                if !current { state.views.removeAll(keepingCapacity: true) }
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
            for (key, view) in session.staged {
                state.clock += 1
                state.views[key] = Entry(view: view, used: state.clock)
            }
            if state.views.count > capacity {
                // Down to three quarters, so that the sort runs once per many transactions.
                let keep = state.views.sorted { $0.value.used > $1.value.used }.prefix(capacity * 3 / 4)
                state.views = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
            }
        }
    }

    /// A view the memo holds, marked as used.
    fileprivate func view(_ key: Key) -> BookView? {
        state.withLock { state in
            guard var entry = state.views[key] else { return nil }
            state.clock += 1
            entry.used = state.clock
            state.views[key] = entry
            return entry.view
        }
    }

    /// The views the memo holds, and the ID of the transaction that last updated it (for tests).
    var contents: (views: [BookView], transaction: UInt64?) { state.withLock { ($0.views.values.map(\.view), $0.transaction) } }

    /// What one write transaction read and wrote of book views, moved into the memo at its commit.
    ///
    /// Not `Sendable`: it belongs to one write transaction, which is bound to one thread.
    final class Session {
        let generation: Int
        private unowned let memo: BookViewMemo
        /// Whether the memo's views were current when the transaction began.
        private let current: Bool
        /// Views read or written in this transaction, as they are stored now.
        fileprivate var staged: [Key: BookView] = [:]
        private(set) var isInvalid = false

        fileprivate init(memo: BookViewMemo, generation: Int, current: Bool) {
            self.memo = memo
            self.generation = generation
            self.current = current
        }

        /// The stored view of a book as this transaction sees it, if the session or the memo
        /// knows it (`nil`: read the records).
        func view(reader: ReaderID, book: BookID) -> BookView? {
            guard !isInvalid else { return nil }
            let key = Key(reader: reader, book: book)
            if let view = staged[key] { return view }
            guard current else { return nil }
            return memo.view(key)
        }

        /// Whether the session or the memo holds the book's view (then its stored records are in
        /// the form ``LMDBViewStore/putBookView(_:)`` writes).
        func knows(reader: ReaderID, book: BookID) -> Bool { view(reader: reader, book: book) != nil }

        /// Notes a book view as it is now stored: read from its records (in summary form) or just
        /// written.
        func note(_ view: BookView) {
            guard !isInvalid else { return }
            staged[Key(reader: view.reader, book: view.book)] = view
        }

        /// Marks the transaction as writing book views outside the memo: it no longer answers, and
        /// the commit empties the memo.
        func invalidate() {
            isInvalid = true
            staged = [:]
        }
    }
}
