import Foundation

// The JSON bodies of the sync server's protocol (`Server/Sources/SyncServerCore/openapi.yaml`),
// declared once for the server (`Server/`) and its client (`ReadingSync`). IDs travel as
// lowercase UUID strings, records as base64 of `BinaryEventCodec.encodeRecord`.

/// `POST /v1/devices`: the first device of a reader names the reader; another device of the same
/// reader sends only its name (with an existing device's token).
///
/// `Sendable`: a value type.
public struct RegisterRequest: Sendable, Hashable, Codable {
    /// The reader (required without a token).
    public var reader: UUID?
    /// The device's name: 1 ... 300 UTF-8 bytes without control characters.
    public var name: String
    /// Creates a body.
    public init(reader: UUID?, name: String) { self.reader = reader; self.name = name }
}

/// The answer to a registration: the device and its token (shown once; the server keeps a hash).
///
/// `Sendable`: a value type.
public struct Registration: Sendable, Hashable, Codable {
    /// The reader.
    public var reader: String
    /// The new device's ID.
    public var device: String
    /// The bearer token.
    public var token: String
    /// Creates an answer.
    public init(reader: String, device: String, token: String) { self.reader = reader; self.device = device; self.token = token }
}

/// `POST /v1/events`: a batch of records.
///
/// `Sendable`: a value type.
public struct PushRequest: Sendable, Hashable, Codable {
    /// One pushed record.
    ///
    /// `Sendable`: a value type.
    public struct Event: Sendable, Hashable, Codable {
        /// Base64 of the record.
        public var record: String
        /// Creates an event.
        public init(record: String) { self.record = record }
    }
    /// The records, in the order the device recorded them.
    public var events: [Event]
    /// Creates a body.
    public init(events: [Event]) { self.events = events }
}

/// What a push did.
///
/// `Sendable`: a value type.
public struct PushResult: Sendable, Hashable, Codable {
    /// Events stored now.
    public var stored: Int
    /// Events already stored (by event ID and origin), or repeated in the batch: skipped.
    public var duplicates: Int
    /// The reader's last arrival after the push.
    public var lastArrival: Int64
    /// With `pull=1`: the page a pull after `after` answers once the push is stored (one request
    /// per device cycle); absent otherwise.
    public var page: PullPage?
    /// Creates a result.
    public init(stored: Int, duplicates: Int, lastArrival: Int64, page: PullPage? = nil) {
        self.stored = stored; self.duplicates = duplicates; self.lastArrival = lastArrival; self.page = page
    }
}

/// One pulled event.
///
/// `Sendable`: a value type.
public struct PulledEvent: Sendable, Hashable, Codable {
    /// The reader whose event it is (the device's own, or a partner's).
    public var reader: String
    /// Its arrival number in that reader's log.
    public var arrival: Int64
    /// The event ID.
    public var eventID: String
    /// The record as pushed, base64.
    public var record: String
    /// Creates an event.
    public init(reader: String, arrival: Int64, eventID: String, record: String) {
        self.reader = reader; self.arrival = arrival; self.eventID = eventID; self.record = record
    }
}

/// A page of `GET /v1/events`.
///
/// `Sendable`: a value type.
public struct PullPage: Sendable, Hashable, Codable {
    /// The events, by reader then arrival.
    public var events: [PulledEvent]
    /// The cursor to pass as `after` next time.
    public var next: String
    /// True when the page is full: pull again with `next` right away.
    public var more: Bool
    /// Creates a page.
    public init(events: [PulledEvent], next: String, more: Bool) { self.events = events; self.next = next; self.more = more }
}

/// A device as listed to its reader (`GET /v1/devices`).
///
/// `Sendable`: a value type.
public struct DeviceInfo: Sendable, Hashable, Codable {
    /// The device.
    public var device: String
    /// Its name.
    public var name: String
    /// When it registered.
    public var createdAt: Date
    /// When its token was revoked, if it was.
    public var revokedAt: Date?
    /// Creates an entry.
    public init(device: String, name: String, createdAt: Date, revokedAt: Date?) {
        self.device = device; self.name = name; self.createdAt = createdAt; self.revokedAt = revokedAt
    }
}

/// `GET /v1/devices`.
///
/// `Sendable`: a value type.
public struct DeviceList: Sendable, Hashable, Codable {
    /// The reader's devices, oldest first.
    public var devices: [DeviceInfo]
    /// Creates a list.
    public init(devices: [DeviceInfo]) { self.devices = devices }
}

/// `POST /v1/invites`.
///
/// `Sendable`: a value type.
public struct InviteRequest: Sendable, Hashable, Codable {
    /// 1 ... 604,800 seconds (default 86,400).
    public var expiresInSeconds: Int?
    /// Creates a body.
    public init(expiresInSeconds: Int?) { self.expiresInSeconds = expiresInSeconds }
}

/// A single-use invite code and when it expires.
///
/// `Sendable`: a value type.
public struct Invite: Sendable, Hashable, Codable {
    /// The code to give the partner (shown once: the server keeps only its hash).
    public var code: String
    /// When it stops working (ISO 8601).
    public var expiresAt: String
    /// Creates an invite.
    public init(code: String, expiresAt: String) { self.code = code; self.expiresAt = expiresAt }
}

/// `POST /v1/invites/accept`.
///
/// `Sendable`: a value type.
public struct AcceptRequest: Sendable, Hashable, Codable {
    /// The code as typed (case, dashes and spaces do not matter); at most 64 bytes.
    public var code: String
    /// Creates a body.
    public init(code: String) { self.code = code }
}

/// The answer to an accepted invite.
///
/// `Sendable`: a value type.
public struct AcceptAnswer: Sendable, Hashable, Codable {
    /// The inviter, now a partner.
    public var partner: String
    /// Creates an answer.
    public init(partner: String) { self.partner = partner }
}

/// A partner as listed to a reader.
///
/// `Sendable`: a value type.
public struct Partner: Sendable, Hashable, Codable {
    /// The partner's reader ID.
    public var reader: String
    /// Since when.
    public var since: Date
    /// Creates an entry.
    public init(reader: String, since: Date) { self.reader = reader; self.since = since }
}

/// `GET /v1/partners`.
///
/// `Sendable`: a value type.
public struct PartnerList: Sendable, Hashable, Codable {
    /// The partners, oldest partnership first.
    public var partners: [Partner]
    /// Creates a list.
    public init(partners: [Partner]) { self.partners = partners }
}

/// The body of every error: `{"error": code, "field": field, "rule": rule, "message": message}`.
///
/// `Sendable`: a value type.
public struct ErrorBody: Sendable, Hashable, Codable {
    /// A stable code, e.g. `malformed_record`.
    public var error: String
    /// The request field at fault.
    public var field: String?
    /// For a refused record, the `ReadingEvents` rule it breaks.
    public var rule: String?
    /// A sentence for people.
    public var message: String
    /// Creates a body.
    public init(error: String, field: String?, rule: String?, message: String) {
        self.error = error; self.field = field; self.rule = rule; self.message = message
    }
}
