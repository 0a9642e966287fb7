import DemoHistory
import Foundation
import Projections
import ReadingEvents
import TestSupport
import Testing
@testable import EventStoreLMDB

/// Issue 28: the reader's record keeps the longest streak run, so the streaks query is lookups,
/// not a walk over every run. The kept run must be exactly what the walk finds, after in-order
/// appends, after merges in reverse order (every late event refolds its book: runs split and
/// join again), after a rebuild, and in a fresh fold.
@Suite struct LongestRunTests {
    typealias F = Facade

    /// The longest run by walking every run (the rule before the record kept it).
    static func walked(_ views: some ViewStore, _ reader: ReaderID) throws -> StreakRun? {
        var longest: StreakRun?
        for run in try views.streakRuns(reader: reader) where run.length > (longest?.length ?? 0) { longest = run }
        return longest
    }

    static func expectKept(_ store: ReadingStore, _ readers: Set<ReaderID>, _ when: String) throws {
        try store.withViews { views in
            for reader in readers {
                let kept = try views.readerView(reader: reader)?.longestRun
                #expect(kept == (try Self.walked(views, reader)), "\(when): reader \(reader)")
                #expect(kept != nil, "\(when): the demo readers read on consecutive days")
                #expect(try views.streaks(reader: reader, asOf: LocalDate(dayNumber: 30_000)).longest == kept)
            }
        }
    }

    @Test(arguments: [UInt64(0x28A), 0x28B, 0x28C])
    func theKeptLongestRunIsTheWalkedOne(seed: UInt64) throws {
        try withTempDirectory { dir in
            let history = F.history(readers: 2, days: 120, seed: seed)
            let readers = Set(history.map(\.reader))
            let a = try ReadingStore.open(at: dir.child("a"))
            _ = try F.appendInChunks(a, history, chunk: 300)
            try Self.expectKept(a, readers, "appended in order")

            // Another store merges a's events newest page first: most events arrive late.
            let b = try ReadingStore.open(at: dir.child("b"))
            let changes = try a.changes(since: VersionVector(), limit: .max)
            let pages = stride(from: 0, to: changes.count, by: 200).map { Array(changes[$0..<min($0 + 200, changes.count)]) }
            for page in pages.reversed() { _ = try b.merge(page) }
            try Self.expectKept(b, readers, "merged in reverse")
            #expect(try b.viewDigest() == a.viewDigest())

            _ = try b.rebuild()
            try Self.expectKept(b, readers, "rebuilt")
            #expect(try b.viewDigest() == b.freshFoldDigest())
        }
    }
}
