import Foundation
import FuzzSupport
@testable import Paperboy

/// URL scopes (`URLScope`, `NormalizedPath`): what credentials, per-host options, SFTP rules,
/// redirects, catalogs and the conformance suite compare URLs with. The input is two lines: a
/// scope (a `[[credentials]] match`) and a URL (a catalog's asset).
///
/// Promises: a scope covers the URL it was written as; normal form is a fixed point (normalizing
/// a normalized URL changes nothing) and changes no scope's answer (catalogs store URLs
/// normalized, credentials are then chosen on the stored URL); a covered URL has the scope's
/// origin; `isSameOrigin` is symmetric; the most specific of a scope and its origin is the scope.
@main
enum FuzzURLScope {
    static func main() { Fuzzer.main(fuzz) }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    let lines = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
    let scopeText = String(lines[0])
    let urlText = lines.count > 1 ? String(lines[1]) : scopeText
    let scopeURL = URL(string: scopeText)
    let scope = URLScope(string: scopeText)
    if let scope, let scopeURL {
        Fuzzer.expect(scope.contains(scopeURL), "\(scope) does not cover the URL it was written as, \(scopeText)")
        _ = scope.description
    }
    guard let url = URL(string: urlText) else { return 0 }
    if let scopeURL {
        Fuzzer.expect(URLScope.isSameOrigin(scopeURL, url) == URLScope.isSameOrigin(url, scopeURL), "isSameOrigin is not symmetric")
    }
    let normal = URLScope.normalized(url)
    if let normal {
        let again = URLScope.normalized(normal)
        Fuzzer.expect(again?.absoluteString == normal.absoluteString,
                      "\(urlText) normalizes to \(normal.absoluteString), which normalizes to \(again?.absoluteString ?? "nothing")")
    }
    guard let scope else { return 0 }
    let covers = scope.contains(url)
    if covers, let scopeURL {
        Fuzzer.expect(URLScope.isSameOrigin(scopeURL, url), "\(scope) covers \(urlText) of another origin")
    }
    if let normal {
        Fuzzer.expect(scope.contains(normal) == covers,
                      "\(scope) \(covers ? "covers" : "does not cover") \(urlText) but \(covers ? "not" : "does") its normal form \(normal.absoluteString)")
    }
    let chosen = URLScope.mostSpecific([scope.origin, scope], for: url) { $0 }
    Fuzzer.expect(chosen == (covers ? scope : (scope.origin.contains(url) ? scope.origin : nil)),
                  "mostSpecific chose \(chosen.map(String.init(describing:)) ?? "nothing") for \(urlText)")
    return 0
}
