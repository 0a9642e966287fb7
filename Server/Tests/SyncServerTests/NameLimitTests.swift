import Foundation
import Testing

@Suite("Byte limits and bad bytes in device names", needsPostgres)
struct NameLimitTests {
    /// One grapheme of 100,001 scalars (a letter and 100,000 combining accents) is over the byte
    /// limit; a NUL is 400, not 503; a name at the limit is taken.
    @Test func aDeviceNameIsLimitedInBytesAndANulIs400() async throws {
        let fixture = try Fixture()
        let reader = UUID()
        let phone = try await TestDevice.registerFirst(fixture.baseURL, reader: reader)
        let heavy = "e" + String(repeating: "\u{0301}", count: 100_000)
        #expect(heavy.count == 1)
        for (name, bad) in [("one heavy grapheme", heavy), ("a NUL", "pho\u{0}ne"), ("empty", "")] {
            let reply = try await phone.send(.POST, "/v1/devices", json: ["name": bad])
            #expect(reply.status == 400, "\(name): \(reply.status) \(reply.text.prefix(200))")
            #expect(reply.field == "name", "\(name)")
        }
        let atLimit = String(repeating: "가", count: 100)   // 300 bytes
        #expect(try await phone.send(.POST, "/v1/devices", json: ["name": atLimit]).status == 201)
    }
}
