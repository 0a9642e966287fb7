import Crypto
import Foundation

/// Device tokens and invite codes: random secrets of which the server keeps only a SHA-256.
///
/// A device token reads `<reader UUID>.<secret>`, the secret being 32 random bytes in base64url
/// (43 characters). The reader part is not secret: it routes the lookup to the reader's partition
/// (`devices` is keyed by reader), so no table needs an index across readers for authentication.
///
/// `Sendable`: a namespace.
public enum Tokens {
    /// A new token for `reader`, and the SHA-256 of its secret (what the server stores).
    public static func newDeviceToken(reader: UUID) -> (token: String, hash: [UInt8]) {
        var generator = SystemRandomNumberGenerator()
        let secret = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return (reader.uuidString.lowercased() + "." + base64url(secret), sha256(secret))
    }

    /// Parses a token into its reader and the SHA-256 of its secret; nil when it is not of the form.
    public static func parse(_ token: String) -> (reader: UUID, hash: [UInt8])? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let reader = UUID(uuidString: String(parts[0])),
              let secret = decodeBase64url(String(parts[1])), secret.count == 32 else { return nil }
        return (reader, sha256(secret))
    }

    /// The Crockford base32 alphabet (no I, L, O, U): codes that people can read aloud and type.
    static let codeAlphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")

    /// A new invite code of 10 characters (50 random bits) and the SHA-256 of its normalized form.
    public static func newInviteCode() -> (code: String, hash: [UInt8]) {
        var generator = SystemRandomNumberGenerator()
        let code = String((0..<10).map { _ in codeAlphabet[Int.random(in: 0..<codeAlphabet.count, using: &generator)] })
        return (code, inviteHash(code))
    }

    /// The SHA-256 of an invite code as typed: case, spaces and dashes do not matter.
    public static func inviteHash(_ code: String) -> [UInt8] {
        let normalized = code.uppercased().filter { $0 != "-" && $0 != " " }
        return sha256(Array(normalized.utf8))
    }

    static func sha256(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes)) }

    /// Base64url without padding.
    ///
    /// The alphabet is swapped byte by byte: every request decodes a token and every pull page
    /// encodes a cursor, and Foundation's `replacingOccurrences` took 3.5% of the server's CPU
    /// under load (`perf`, issue 38).
    public static func base64url(_ bytes: [UInt8]) -> String {
        var text = Array(Data(bytes).base64EncodedData())
        while text.last == UInt8(ascii: "=") { text.removeLast() }
        swap(&text, "+", "-", "/", "_")
        return String(decoding: text, as: UTF8.self)
    }

    /// Decodes base64url with or without padding (the standard alphabet's `+` and `/` are read
    /// as well, as before).
    public static func decodeBase64url(_ text: String) -> [UInt8]? {
        var base64 = Array(text.utf8)
        swap(&base64, "-", "+", "_", "/")
        while base64.count % 4 != 0 { base64.append(UInt8(ascii: "=")) }
        return Data(base64Encoded: Data(base64)).map { Array($0) }
    }

    /// Replaces every `a` in `text` with `b` and every `c` with `d`, in place.
    private static func swap(_ text: inout [UInt8], _ a: Unicode.Scalar, _ b: Unicode.Scalar, _ c: Unicode.Scalar, _ d: Unicode.Scalar) {
        let (a, b, c, d) = (UInt8(ascii: a), UInt8(ascii: b), UInt8(ascii: c), UInt8(ascii: d))
        for index in text.indices {
            if text[index] == a { text[index] = b } else if text[index] == c { text[index] = d }
        }
    }
}
