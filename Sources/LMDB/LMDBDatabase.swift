#if canImport(CLMDBVendored)
import CLMDBVendored
#else
import CLMDB
#endif

/// A named LMDB database whose keys and values are typed by codecs.
///
/// A handle is opened once per environment (``LMDBEnvironment/openDatabase(named:keys:values:create:)``)
/// and then used in any transaction of that environment. It is a plain value.
public struct LMDBDatabase<Key: LMDBKeyCodec, Value: LMDBValueCodec>: Sendable, Equatable {
    /// The database's name in the environment.
    public let name: String
    /// LMDB's handle (a small integer), valid for the environment's lifetime.
    let handle: MDB_dbi

    init(name: String, handle: MDB_dbi) {
        self.name = name
        self.handle = handle
    }

    /// The same database (the same handle, the same stored bytes) typed with other codecs and
    /// named `name` in errors: one database that holds several tables, each a range of its keys
    /// with a codec of its own (the store's view tables, issue 37).
    package func table<OtherKey: LMDBKeyCodec, OtherValue: LMDBValueCodec>(
        named name: String, keys: OtherKey.Type = OtherKey.self, values: OtherValue.Type = OtherValue.self
    ) -> LMDBDatabase<OtherKey, OtherValue> {
        LMDBDatabase<OtherKey, OtherValue>(name: name, handle: handle)
    }

    /// The same database with raw-byte keys and values (for table-agnostic work such as clearing
    /// or copying tables of different key types); the stored bytes are the same.
    public var untyped: LMDBDatabase<RawBytes, RawBytes> {
        LMDBDatabase<RawBytes, RawBytes>(name: name, handle: handle)
    }
}

/// Flags of ``WriteTransaction/put(_:_:_:flags:)``.
public struct LMDBPutFlags: OptionSet, Sendable {
    /// The raw LMDB flags.
    public let rawValue: UInt32

    /// Flags from LMDB's raw bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `MDB_NOOVERWRITE`: fail with ``LMDBError/Kind/keyExists`` if the key is already stored.
    public static let noOverwrite = LMDBPutFlags(rawValue: UInt32(MDB_NOOVERWRITE))
    /// `MDB_APPEND`: the key is greater than every stored key (fast bulk load); LMDB fails with
    /// ``LMDBError/Kind/keyExists`` if it is not.
    public static let append = LMDBPutFlags(rawValue: UInt32(MDB_APPEND))
}

/// The direction of a cursor walk.
public enum LMDBDirection: Sendable, Equatable {
    /// Ascending key order.
    case forward
    /// Descending key order.
    case backward
}
