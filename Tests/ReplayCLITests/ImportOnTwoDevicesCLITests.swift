import Foundation
import TestSupport
import Testing

/// Issue 36, finding 4 with the built binary: the same Goodreads account imported on two devices
/// from two exports (one page count changed; the same export in another zone), then
/// `replay sync --store A --with B`: exit 0, identical views, nothing set aside.
@Suite("replay sync of two devices that imported different exports")
struct ImportOnTwoDevicesCLITests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("ImportFixtures")
    static let reader = "5b0e7c2a-3f1d-4e8a-9c61-0d2b7a4f9e13"

    func importAndSync(phoneFile: String, tabletFile: String, tabletZone: String) throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let phone = temp.path("phone"), tablet = temp.path("tablet")
        try replayOK(["import-from", "goodreads", phoneFile, "--reader", Self.reader, "--zone", "Asia/Seoul", "--store", phone])
        try replayOK(["import-from", "goodreads", tabletFile, "--reader", Self.reader, "--zone", tabletZone, "--store", tablet])
        for _ in 0..<2 {
            let sync = try replay(["sync", "--store", phone, "--with", tablet])
            // Before: exit 1 on every run, each side's records of the other export quarantined.
            #expect(sync.status == 0, "\(sync)")
            #expect(sync.stdoutLines.last?.hasPrefix("views: equal (digest ") == true, "\(sync)")
            #expect(!sync.stdout.contains("quarantined"), "\(sync)")
        }
        for store in [phone, tablet] {
            #expect(try replayOK(["sync", "quarantine", "--store", store]).stdoutLines == ["0 event(s) in the quarantine"])
            let verify = try replay(["verify", "--store", store])
            #expect(verify.status == 0, "\(verify)")
        }
    }

    @Test("a newer export with one page count changed") func newerExport() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let text = try String(contentsOf: Self.fixtures.appendingPathComponent("goodreads-24.csv"), encoding: .utf8)
        let newer = text.replacingOccurrences(of: "Mass Market Paperback,304,", with: "Mass Market Paperback,310,")
        #expect(newer != text)
        let file = temp.child("newer.csv")
        try newer.write(to: file, atomically: true, encoding: .utf8)
        try importAndSync(phoneFile: Self.fixtures.appendingPathComponent("goodreads-24.csv").path, tabletFile: file.path, tabletZone: "Asia/Seoul")
    }

    @Test("the same export in another zone") func anotherZone() throws {
        let file = Self.fixtures.appendingPathComponent("goodreads-24.csv").path
        try importAndSync(phoneFile: file, tabletFile: file, tabletZone: "America/New_York")
    }
}
