import DemoHistory
import Foundation
import LMDB
import Projections
import ReadingEvents
import TestSupport
import Testing
@testable import EventStoreLMDB

/// Issue 29: one list of view tables (``ViewTable``) drives the table set, the digest, `rebuild
/// --view` and the docs. Before it, three hand-kept lists had drifted: `--view books` copied one
/// of a book's six tables, and the DocC overview named only some.
@Suite struct ViewTableTests {
    typealias F = Facade

    /// Every view name, with every one of its tables emptied in the active views: the digest sees
    /// the damage, and `rebuild(view:)` of that name alone brings back the digest of the
    /// incremental views (every table of the view, not one).
    @Test(arguments: ViewTable.views)
    func rebuildingOneViewRestoresEveryOneOfItsTables(view: String) throws {
        try withTempDirectory { dir in
            let history = F.history(readers: 2, days: 60, seed: 0x5EED_0029)
            let store = try ReadingStore.open(at: dir.child("store"))
            _ = try F.appendInChunks(store, history, chunk: 500)
            let incremental = try store.viewDigest()
            let tables = ViewTable.tables(of: view)
            #expect(!tables.isEmpty)
            try store.log.environment.write { txn in
                let active = store.generations[try store.activeGeneration(txn)]
                for table in tables {
                    #expect(try active[table].count(txn) > 0, "the demo history fills \(table)")
                    try active[table].removeAll(txn)
                }
            }
            #expect(try store.viewDigest() != incremental, "emptying \(tables) changes the digest")
            #expect(try store.rebuild(view: view).digest == incremental)
            #expect(try store.viewDigest() == store.freshFoldDigest())
        }
    }

    @Test func aNameThatIsNoViewIsRefusedNamingTheViews() throws {
        try withTempDirectory { dir in
            let store = try ReadingStore.open(at: dir.child("store"))
            #expect {
                try store.rebuild(view: "bookEntries")
            } throws: { error in
                guard case EventStoreError.invalidArgument(let field, let detail) = error else { return false }
                return field == "view" && detail.contains("books, days, bookDays, months, buckets, runs, readers, goals, years")
            }
        }
    }

    /// The DocC overview's table of view tables lists exactly ``ViewTable``, in order, with each
    /// table's view and summary.
    @Test func theDocCOverviewListsEveryTable() throws {
        let article = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/EventStoreLMDB/EventStoreLMDB.docc/EventStoreLMDB.md")
        let text = try String(contentsOf: article, encoding: .utf8)
        let section = try #require(text.components(separatedBy: "### The view tables").dropFirst().first)
        let rows = section.split(separator: "\n").filter { $0.hasPrefix("| `") }
        let documented = rows.map { row in
            row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "`")) }
        }
        let expected = ViewTable.allCases.map { [$0.rawValue, $0.view, $0.summary] }
        #expect(documented == expected)
    }

    /// A table's group and part bytes are on disk in every store: derived from ``ViewRecordKind``
    /// (its raw value), they stay the bytes stores were written with, whatever order the kinds
    /// are declared in. A new table gets a new byte.
    @Test func theGroupAndPartBytesOfEveryTableAreTheOnesOnDisk() {
        let onDisk: [String: (group: UInt8, part: UInt8?)] = [
            "books": (0, 0), "decisions": (0, 1), "bookEntries": (0, 2), "bookSessions": (0, 3),
            "bookSentences": (0, 4), "bookMemos": (0, 5), "days": (1, nil), "bookDays": (2, nil),
            "months": (3, nil), "buckets": (4, nil), "runs": (5, nil), "readers": (6, nil),
            "goals": (7, nil), "years": (8, nil),
        ]
        for table in ViewTable.allCases {
            guard let bytes = onDisk[table.rawValue] else {
                #expect(table.group > 8 && table.part == nil, "a new table, \(table), takes a new group byte")
                continue
            }
            #expect(table.group == bytes.group && table.part == bytes.part, "\(table)")
            #expect(ViewTable(rawValue: table.rawValue) == table)
        }
        #expect(Set(ViewTable.allCases.map(\.group)).count == ViewTable.allCases.count - 5, "one group for a book view's six tables, one for each other")
        #expect(ViewTable.allCases.prefix(onDisk.count).map(\.rawValue) == [
            "books", "bookEntries", "bookSessions", "bookSentences", "bookMemos", "decisions", "days", "bookDays",
            "months", "buckets", "runs", "readers", "goals", "years",
        ], "the order of the digest's tables")
    }
}
