use super::*;

#[test]
fn answers_of_the_other_era_are_suspect() {
    assert!(answer_suggests_other_era(Era::Stateless, 400, false));
    assert!(answer_suggests_other_era(Era::Stateless, 200, true));
    assert!(!answer_suggests_other_era(Era::Stateless, 200, false));
    assert!(answer_suggests_other_era(Era::Legacy, 404, false));
    assert!(!answer_suggests_other_era(Era::Legacy, 200, true));
}
