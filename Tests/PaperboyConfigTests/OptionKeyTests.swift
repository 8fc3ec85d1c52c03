import Foundation
import Paperboy
import Testing
@testable import PaperboyConfig

/// Issue 26, case 7: option key names are compared after Unicode compatibility normalization and
/// case folding (``OptionKey``), for the reserved keys and the secret-looking ones.
@Suite(.timeLimit(.minutes(1))) struct OptionKeyTests {
    /// Spellings a helper could read as a reserved or secret key: letter case, fullwidth forms,
    /// ligatures, the Turkish dotless ı (upper-cased to I), the Kelvin sign, the long s.
    static let lookAlikes: [(spelling: String, folded: String)] = [
        ("CA_FILE", "ca_file"), ("Ca_File", "ca_file"), ("KNOWN_HOSTS", "known_hosts"), ("Private_Key", "private_key"),
        ("USER", "user"), ("Username", "username"), ("ＣＡ_ＦＩＬＥ", "ca_file"), ("ｃａ＿ｆｉｌｅ", "ca_file"),
        ("ca_\u{FB01}le", "ca_file"), ("pr\u{0131}vate_key", "private_key"), ("PR\u{0130}VATE_KEY", "private_key"),
        ("\u{212A}NOWN_HOSTS", "known_hosts"), ("u\u{017F}er", "user"), ("Ｕｓｅｒｎａｍｅ", "username"),
        ("c\u{0430}_file", "c\u{0430}_file"),  // a Cyrillic а is another letter, not a case or width form
    ]

    @Test(arguments: lookAlikes.indices)
    func lookAlikesFoldToTheKeyTheyImitate(_ index: Int) {
        let (spelling, folded) = Self.lookAlikes[index]
        #expect(OptionKey.folded(spelling) == folded, "\(spelling.unicodeScalars.map { String($0.value, radix: 16) })")
    }

    static let secretLooking = ["API_TOKEN", "Pass\u{FF37}ord", "\u{017F}ecret", "X-PASSPHRASE", "Ｔｏｋｅｎ"]

    @Test func secretWordsAreFoundInAnySpelling() {
        for key in Self.secretLooking {
            #expect(OptionKey.secretWord(in: key) != nil, "\(key)")
        }
        #expect(OptionKey.secretWord(in: "mode") == nil)
        #expect(OptionKey.secretWord(in: "region") == nil)
    }

    @Test func everyLookAlikeIsRefused() {
        for (spelling, folded) in Self.lookAlikes where OptionKey.reserved.contains(folded) {
            #expect(TransportOptions.problem(key: spelling, value: "/tmp/evil.pem") != nil, "\(spelling)")
        }
        for key in Self.secretLooking {
            #expect(TransportOptions.problem(key: key, value: "x") != nil, "\(key)")
        }
        #expect(TransportOptions.problem(key: "mode", value: "passive") == nil)
        #expect(TransportOptions.problem(key: "CA_FILE", value: "x")?.contains("(spelled 'ca_file' there)") == true)
    }

    @Test func otherSpellingsOfReservedKeysNeverReachATransport() {
        let stored = ["ca_file": "/etc/ok.pem", "CA_FILE": "/tmp/evil.pem", "Known_Hosts": "/tmp/evil", "mode": "passive",
                      "ＵＳＥＲ": "mallory"]
        #expect(OptionKey.withoutLookAlikes(stored) == ["ca_file": "/etc/ok.pem", "mode": "passive"])
    }
}
