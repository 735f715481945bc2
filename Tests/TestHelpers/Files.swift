public import Foundation

extension Data {
    /// The UTF-8 bytes of `string`.
    public init(_ string: String) { self = Data(string.utf8) }
}

/// The bytes of a file, to prove it was left unchanged.
public func contents(of url: URL) throws -> Data { try Data(contentsOf: url) }

/// POSIX permission bits of a file (-1 when the file system gives none).
public func permissions(of url: URL) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
    return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
}
