import EventStoreLMDB
import Foundation
import Observation
import Projections
import ReadingEvents
import TestSupport
import Testing

// --- as in EventStoreLMDB.docc, "Using the store in an iOS app" (the model is plain Swift) ---

/// The home screen's model: the home list of one reader, refreshed whenever the store gets an
/// event of that reader (from this app, its widget's process, a background sync or a merge).
@MainActor @Observable
final class HomeModel {
    private(set) var items: [HomeItem] = []
    private(set) var lastPosition: UInt64 = 0
    private let store: ReadingStore
    private let reader: ReaderID
    private let zone: ZoneID

    init(store: ReadingStore, reader: ReaderID, zone: ZoneID) {
        self.store = store
        self.reader = reader
        self.zone = zone
    }

    /// Reads the home list as of now.
    func refresh() throws {
        let reader = reader, zone = zone
        items = try store.withViews { views in
            try views.homeList(reader: reader, asOf: Timestamp(Date()), zone: zone, sortedBy: .titleAscending)
        }.items
    }

    /// Refreshes on every new event of the reader after `position` (by default, from the end of
    /// the log when it starts) until the task is cancelled (`.task { }` in SwiftUI).
    func follow(after position: UInt64? = nil) async throws {
        let changes = try store.changes(for: reader, after: position)
        try refresh()
        for try await position in changes {
            lastPosition = position
            try refresh()
        }
    }
}

// --- end of the article's code ---

/// The article's model, against a real store: it compiles on Linux (Observation is part of the
/// Swift toolchain) and shows what the store appends.
@Suite struct AppModelExampleTests {
    @MainActor @Test func theHomeModelFollowsTheStoreAndNotifiesItsObservers() async throws {
        let dir = TempDirectory()   // not withTempDirectory: this body stays on the main actor
        defer { dir.remove() }
        do {
            let store = try ReadingStore.open(at: dir.child("reading"))
            let reader = ReaderID(deterministicID(prefix: "app-model-reader", index: 0))
            let book = BookID(deterministicID(prefix: "app-model-book", index: 0))
            let model = HomeModel(store: store, reader: reader, zone: try ZoneID("Asia/Seoul"))
            try model.refresh()
            #expect(model.items.isEmpty)

            let observed = ObservedFlag()
            withObservationTracking { _ = model.items } onChange: { observed.set() }
            let following = Task { try await model.follow(after: 0) }   // after 0: however late the task starts
            defer { following.cancel() }

            func now() -> CommandContext {
                CommandContext(reader: reader, occurredAt: Timestamp(Date()), timeZone: "Asia/Seoul")
            }
            let today = LocalClock().localDay(of: Timestamp(Date()), in: try ZoneID("Asia/Seoul"))
            try store.execute(.addBook(BookMetadata(title: "소년이 온다", pageCount: 216), status: .reading), book: book, context: now())
            try store.execute(.setGoal(startDate: today, targetDate: today.adding(days: 30), theme: nil), book: book, context: now())
            let last = try store.execute(.recordPages(position: 50), book: book, context: now())

            // Wait (without a time assertion) until the model has seen the last append.
            let position = try #require(last.last).position
            for _ in 0..<2_000 where model.lastPosition < position {
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(model.lastPosition == position)
            #expect(model.items.map(\.book) == [book])
            #expect(model.items.first?.position == 50)
            #expect(observed.isSet)
        }
    }
}

/// Set once by an observation's `onChange` (which may run on another thread).
final class ObservedFlag: @unchecked Sendable {
    // @unchecked Sendable: `value` is only touched under `lock`.
    private let lock = NSLock()
    private var value = false
    func set() { lock.lock(); value = true; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
}
