import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import ReadingEvents

/// An HTTP response: status and body.
struct Reply: Sendable {
    let status: Int
    let body: Data
    var headers: HTTPHeaders = [:]

    var json: [String: Any] { ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any]) ?? [:] }
    var text: String { String(decoding: body, as: UTF8.self) }
    /// The `field` of an error body.
    var field: String? { json["field"] as? String }
    var error: String? { json["error"] as? String }
}

/// A minimal client of the server's protocol, for tests: one device (a token) against one base URL.
struct TestDevice: Sendable {
    var baseURL: String
    var token: String?
    var reader: UUID

    /// Sends a request; `body` is JSON-encoded when it is not already `Data`.
    func send(_ method: HTTPMethod, _ path: String, json body: Any? = nil, token override: String?? = .none,
              headers: [String: String] = [:], timeout: TimeAmount = .seconds(60)) async throws -> Reply {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let token = override ?? token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let body {
            let data = try (body as? Data) ?? JSONSerialization.data(withJSONObject: body)
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: data))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: timeout)
        let buffer = try await response.body.collect(upTo: 64 * 1024 * 1024)
        return Reply(status: Int(response.status.code), body: Data(buffer.readableBytesView), headers: response.headers)
    }

    /// Registers the first device of `reader` on the server at `baseURL`.
    static func registerFirst(_ baseURL: String, reader: UUID, name: String = "phone") async throws -> TestDevice {
        let device = TestDevice(baseURL: baseURL, token: nil, reader: reader)
        let reply = try await device.send(.POST, "/v1/devices", json: ["reader": reader.uuidString, "name": name])
        guard reply.status == 201, let token = reply.json["token"] as? String else {
            throw CommandError(command: ["register"], status: Int32(reply.status), output: reply.text)
        }
        return TestDevice(baseURL: baseURL, token: token, reader: reader)
    }

    /// Registers another device of this device's reader.
    func registerAnother(name: String = "tablet") async throws -> TestDevice {
        let reply = try await send(.POST, "/v1/devices", json: ["name": name])
        guard reply.status == 201, let token = reply.json["token"] as? String else {
            throw CommandError(command: ["register"], status: Int32(reply.status), output: reply.text)
        }
        return TestDevice(baseURL: baseURL, token: token, reader: reader)
    }

    /// The push body of `envelopes`.
    static func pushBody(_ envelopes: [EventEnvelope]) -> [String: Any] {
        ["events": envelopes.map { ["record": Data(BinaryEventCodec.encodeRecord($0)).base64EncodedString()] }]
    }

    /// Pushes envelopes.
    func push(_ envelopes: [EventEnvelope]) async throws -> Reply {
        try await send(.POST, "/v1/events", json: Self.pushBody(envelopes))
    }

    /// Pulls every page after `cursor`: the decoded envelopes with their reader, and the last cursor.
    func pullAll(after cursor: String = "", limit: Int = 200) async throws -> (events: [(reader: UUID, envelope: EventEnvelope)], cursor: String) {
        var cursor = cursor
        var events: [(reader: UUID, envelope: EventEnvelope)] = []
        while true {
            let reply = try await send(.GET, "/v1/events?limit=\(limit)" + (cursor.isEmpty ? "" : "&after=\(cursor)"))
            guard reply.status == 200 else {
                throw CommandError(command: ["pull"], status: Int32(reply.status), output: reply.text)
            }
            let json = reply.json
            for item in json["events"] as? [[String: Any]] ?? [] {
                let reader = UUID(uuidString: item["reader"] as? String ?? "")!
                let bytes = Data(base64Encoded: item["record"] as? String ?? "")!
                events.append((reader, try BinaryEventCodec.decodeRecord(Array(bytes))))
            }
            cursor = json["next"] as? String ?? cursor
            if json["more"] as? Bool != true { break }
        }
        return (events, cursor)
    }
}
