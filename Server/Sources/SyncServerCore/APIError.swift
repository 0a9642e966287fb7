import Foundation
import Hummingbird
import SyncWire

/// A refused request: an HTTP status, a stable machine-readable code, the field at fault (when
/// there is one), for a refused record the `ReadingEvents` rule it breaks, and a sentence naming
/// the rule. Rendered as `{"error": code, "field": field, "rule": rule, "message": message}`
/// (`rule` only when there is one).
///
/// `Sendable`: a value type of strings and a status.
public struct APIError: Error, HTTPResponseError, Sendable, CustomStringConvertible {
    /// The response status.
    public let status: HTTPResponse.Status
    /// A stable code, e.g. `malformed_record`, `forbidden_reader`.
    public let code: String
    /// The request field at fault, e.g. `events[3].record.data.position`.
    public let field: String?
    /// The rule of `ReadingEvents` the field breaks (`ValidationRule`'s raw value, e.g.
    /// `outOfRange`), when a record was refused by one.
    public let rule: String?
    /// A sentence for people.
    public let message: String
    /// Seconds to wait before trying again (the `Retry-After` header), for 429 and 503.
    public let retryAfter: Int?

    /// Creates an error.
    public init(_ status: HTTPResponse.Status, _ code: String, field: String? = nil, rule: String? = nil,
                retryAfter: Int? = nil, _ message: String) {
        self.status = status
        self.code = code
        self.field = field
        self.rule = rule
        self.retryAfter = retryAfter
        self.message = message
    }

    /// `"<code> <field>: <message>"`.
    public var description: String { "\(code)\(field.map { " \($0)" } ?? ""): \(message)" }

    /// The response: the status and the JSON body.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let data = try JSONEncoder().encode(ErrorBody(error: code, field: field, rule: rule, message: message))
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        if status == .unauthorized { headers[.wwwAuthenticate] = "Bearer" }
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func unauthorized(_ message: String) -> APIError {
        APIError(.unauthorized, "unauthorized", field: "Authorization", message)
    }

    static func badRequest(_ code: String, field: String?, _ message: String) -> APIError {
        APIError(.badRequest, code, field: field, message)
    }

    static let notFound = APIError(.notFound, "not_found", "no such resource for this reader")

    /// 409 `invite_limit`: the reader has `limit` live invites (neither used nor expired).
    public static func inviteLimit(_ limit: Int) -> APIError {
        APIError(.conflict, "invite_limit", field: "expiresInSeconds",
                 "a reader has at most \(limit) invites that are neither used nor expired; wait for one to be used or to expire")
    }

    /// 409 `partner_limit`: accepting the invite would give `reader` (the acceptor, or the
    /// inviter) more than `limit` partners. The invite is not used up.
    public static func partnerLimit(_ limit: Int, acceptor: Bool) -> APIError {
        APIError(.conflict, "partner_limit",
                 acceptor ? "a reader has at most \(limit) partners; end a partnership first"
                          : "the inviter has \(limit) partners, the most a reader may have")
    }

    /// 503 `unavailable`: the database cannot be reached now; the request may be sent again.
    static let unavailable = APIError(.serviceUnavailable, "unavailable", retryAfter: 1,
                                      "the database is unavailable; retry the request")
}
