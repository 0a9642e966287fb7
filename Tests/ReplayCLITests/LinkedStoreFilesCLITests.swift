import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A store received as an archive whose `lock.mdb` is a symbolic link (or a hard link) to a file
/// of the user's: every command, `verify` included, used to write LMDB's lock table into that
/// file and make it 0600 (issue 36, finding 7). Now each refuses the store in one line naming the
/// file and the rule, and the file is left byte for byte, with its mode.
@Suite struct LinkedStoreFilesCLITests {
    @Test(arguments: ["symbolic", "hard"])
    func everyCommandRefusesALinkedLockFile(kind: String) throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        try makeDemoStore(at: store)
        let victim = dir.path("notes.txt")
        let content = Data("my notes, not a lock file\n".utf8)
        try content.write(to: URL(fileURLWithPath: victim))
        #expect(chmod(victim, 0o644) == 0)
        let lock = store + "/lock.mdb"
        try FileManager.default.removeItem(atPath: lock)
        if kind == "symbolic" {
            try FileManager.default.createSymbolicLink(atPath: lock, withDestinationPath: victim)
        } else {
            #expect(link(victim, lock) == 0)
        }
        for arguments in [["verify", "--store", store], ["stats", "--store", store], ["export", "--store", store]] {
            let run = try replay(arguments)
            #expect(run.status != 0, "\(run)")
            #expect(run.stderr.split(separator: "\n").count == 1 && run.stderr.contains("lock.mdb"), "\(run)")
            #expect(run.stderr.contains(kind == "symbolic" ? "symbolic link" : "hard links"), "\(run)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: victim)) == content)
        let mode = (try FileManager.default.attributesOfItem(atPath: victim)[.posixPermissions] as? NSNumber)?.intValue
        #expect(mode == 0o644)
    }
}
