import Foundation
import LMDB
import Testing
import TestSupport
@testable import EventStoreLMDB

#if canImport(Glibc)
import Glibc
#endif

/// A `lock.mdb` or `data.mdb` that is a symbolic link or has another hard link (a store received
/// as an archive) is refused before LMDB opens it, and the file it reaches is left as it was.
/// Before: every open, a read-only one included, wrote LMDB's lock table into the file a
/// `lock.mdb` link reached and made it 0600 (issue 36, finding 7).
@Suite struct LinkedStoreFilesTests {
    enum Link: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case lockSymbolic, lockHard, dataSymbolic, dataHard
        var testDescription: String { rawValue }
        var file: String { self == .lockSymbolic || self == .lockHard ? "lock.mdb" : "data.mdb" }
    }

    @Test(arguments: Link.allCases, [false, true])
    func aLinkedStoreFileIsRefusedAndItsTargetIsUntouched(link: Link, readOnly: Bool) throws {
        try withTempDirectory { dir in
            let store = dir.child("store")
            do { _ = try ReadingStore.open(at: store) }
            let name = store.appendingPathComponent(link.file).path
            let victim = dir.child("victim").path
            switch link {
            case .lockSymbolic, .dataSymbolic:
                // A file of the user's, which the link names.
                let bytes = Data((0..<5_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
                try bytes.write(to: URL(fileURLWithPath: victim))
                if link == .dataSymbolic { try FileManager.default.removeItem(atPath: victim); try FileManager.default.moveItem(atPath: name, toPath: victim) }
                try? FileManager.default.removeItem(atPath: name)
                try FileManager.default.createSymbolicLink(atPath: name, withDestinationPath: victim)
            case .lockHard, .dataHard:
                if link == .lockHard {
                    try Data((0..<5_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }).write(to: URL(fileURLWithPath: victim))
                    try FileManager.default.removeItem(atPath: name)
                    #expect(Glibc.link(victim, name) == 0)
                } else {
                    #expect(Glibc.link(name, victim) == 0)
                }
            }
            #expect(chmod(victim, 0o644) == 0)
            let before = try Data(contentsOf: URL(fileURLWithPath: victim))
            #expect {
                _ = try ReadingStore.open(at: store, options: LMDBEnvironmentOptions(readOnly: readOnly))
            } throws: { error in
                guard let lmdb = error as? LMDBError, lmdb.kind == .invalidFile else { return false }
                return lmdb.description.contains(link.file) && lmdb.description.contains("link")
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: victim)) == before, "the file the link reaches was written")
            #expect(try permissions(of: URL(fileURLWithPath: victim)) == 0o644)
        }
    }
}
