"""The identifier scan's column-name rules: what is flagged, in which language, and what is not."""

from __future__ import annotations

import pytest

from reident_airflow.engine.errors import InvalidInputError
from reident_airflow.engine.identifiers import (
    AGE_RULE,
    NAME_RULES,
    NameRule,
    ScanOptions,
    match_name,
    name_tokens,
)


def test_names_are_read_as_words() -> None:
    assert name_tokens("patientID") == ("patient", "id")
    assert name_tokens("SSNNumber") == ("ssn", "number")
    assert name_tokens("E-Mail") == ("e", "mail")
    assert name_tokens("Prénom") == ("prenom",)
    assert name_tokens("Straße") == ("strasse",)
    assert name_tokens("address2") == ("address", "2")
    assert name_tokens("ＩＤ") == ("id",)  # full-width letters
    assert name_tokens("患者ID") == ("患者id",)


@pytest.mark.parametrize(
    ("name", "category"),
    [
        # record numbers
        ("mrn", "record number"),
        ("patient_id", "record number"),
        ("PatientID", "record number"),
        ("customer_no", "record number"),
        ("Kundennummer", "record number"),
        # issue 38: the number word may come first, as French and Spanish write it
        ("numero_dossier", "record number"),
        ("dossier_nr", "record number"),
        ("id_paciente", None),  # the suffix comes after the word in these rules
        ("paciente_id", "record number"),
        ("患者ID", "record number"),
        ("患者番号", "record number"),
        # national ids
        ("ssn", "national id"),
        ("social_security_number", "national id"),
        ("NIR", "national id"),
        ("numero_insee", "national id"),
        ("Steuer-ID", "national id"),
        ("dni", "national id"),
        ("codice_fiscale", "national id"),
        ("BSN", "national id"),
        ("cpf", "national id"),
        ("my_number", "national id"),
        ("マイナンバー", "national id"),
        ("passport_number", "national id"),
        # names
        ("name", "name"),
        ("first_name", "name"),
        ("LastName", "name"),
        ("FIRSTNAME", "name"),
        ("patientname", "name"),
        ("surname", "name"),
        ("prénom", "name"),
        ("nom", "name"),
        ("Nachname", "name"),
        ("Vorname", "name"),
        ("apellido", "name"),
        ("nombre", "name"),
        ("cognome", "name"),
        ("achternaam", "name"),
        ("sobrenome", "name"),
        ("氏名", "name"),
        # contact
        ("email", "e-mail"),
        ("E-Mail", "e-mail"),
        ("emailAddress", "e-mail"),
        ("courriel", "e-mail"),
        ("メールアドレス", "e-mail"),
        ("phone", "phone"),
        ("tel_no", "phone"),
        ("Telefonnummer", "phone"),
        ("telefono", "phone"),
        ("電話番号", "phone"),
        ("mobile", "phone"),
        ("address", "address"),
        ("home_address", "address"),
        ("Straße", "address"),
        ("direccion", "address"),
        ("住所", "address"),
        # network, device, account, licence, web, photo
        ("ip", "network address"),
        ("ip_address", "network address"),
        ("client_ip", "network address"),
        ("ipv6", "network address"),
        ("hostname", "network address"),
        ("device_id", "device"),
        ("imei", "device"),
        ("vin", "device"),
        ("serial_number", "device"),
        ("iban", "account"),
        ("credit_card_number", "account"),
        ("username", "name"),  # both rules say identifier; the name rule comes first
        ("benutzername", "name"),
        ("account_id", "record number"),
        ("driver_license", "licence"),
        ("license_number", "licence"),
        ("Führerschein", "licence"),
        ("website", "web address"),
        ("photo", "photo or biometric"),
        # quasi-identifiers
        ("dob", "birth date"),
        ("date_of_birth", "birth date"),
        ("Geburtsdatum", "birth date"),
        ("fecha_de_nacimiento", "birth date"),
        ("生年月日", "birth date"),
        ("zip", "postcode"),
        ("zip3", "postcode"),
        ("postal_code", "postcode"),
        ("PLZ", "postcode"),
        ("郵便番号", "postcode"),
    ],
)
def test_identifier_names_in_each_language(name: str, category: str | None) -> None:
    rule = match_name(name)
    assert (rule.category if rule is not None else None) == category


@pytest.mark.parametrize(
    "name",
    [
        # things that have a name, not people
        "file_name",
        "filename",
        "company_name",
        "product_name",
        "Produktname",
        "bedrijfsnaam",
        "nom_commercial",
        "nome_prodotto",
        "hospital_name",
        # counts, types and flags of identifiers
        "name_count",
        "email_count",
        "n_emails",
        "nb_patients",
        "number_of_phones",
        "phone_type",
        "has_email",
        "email_verified",
        "email_domain",
        "first_name_length",
        "nombre_de_visites",  # French: a count, not the Spanish "name"
        # ids of categories, not of people
        "country_id",
        "category_id",
        "product_id",
        "id",
        # near misses
        "visit_number",
        "visit_date",
        "user_agent",
        "last_login",
        "cell_type",
        "mobile_app",
        "account_balance",
        "birth_year",
        "birth_weight",
        "age",
        "sex",
        "ethnicity",
        "diagnosis",
        "income",
        "mileage",
        "code_insee",  # the INSEE code of a commune, not of a person
        "retina_thickness",
        "license_type",
    ],
)
def test_names_that_are_not_identifiers(name: str) -> None:
    assert match_name(name) is None


def test_street_name_is_an_address_not_a_name() -> None:
    rule = match_name("street_name")
    assert rule is not None and rule.category == "address"


def test_rules_of_different_verdicts_give_the_most_severe() -> None:
    # "mobile" alone is a possible phone; with "phone" it is one
    weak = match_name("mobile")
    assert weak is not None and weak.verdict == "possible identifier"
    strong = match_name("mobile_phone")
    assert strong is not None and strong.verdict == "identifier"


def test_geography_rules_apply_under_safe_harbor_only() -> None:
    assert match_name("city") is None
    rule = match_name("city", safe_harbor=True)
    assert rule is not None
    assert (rule.category, rule.verdict) == (
        "geography below state",
        "quasi-identifier not declared",
    )
    assert match_name("address_city") is None  # only the city of an address


def test_age_names() -> None:
    assert AGE_RULE.matches("age")
    assert AGE_RULE.matches("patient_age")
    assert AGE_RULE.matches("Alter")
    assert AGE_RULE.matches("edad")
    assert AGE_RULE.matches("年齢")
    for name in ("age_group", "age_months", "stage", "mileage", "usage", "gestational_age"):
        assert not AGE_RULE.matches(name), name


def test_user_names_extend_the_rules() -> None:
    assert match_name("matricule") is None
    options = ScanOptions(extra_names=("matricule", "kd nr"))
    rule = match_name("Matricule", options.name_rules)
    assert rule is not None and (rule.category, rule.verdict) == ("extra_names", "identifier")
    assert match_name("KDNR", options.name_rules) is not None
    assert match_name("kd_nr", options.name_rules) is not None


def test_rules_are_checked_when_built() -> None:
    with pytest.raises(InvalidInputError, match="verdict"):
        NameRule("x", "dangerous", terms=("x",))
    with pytest.raises(InvalidInputError, match="blank"):
        NameRule("x", "identifier", terms=("--",))
    with pytest.raises(InvalidInputError, match="blank"):
        NameRule("x", "identifier", terms=())


def test_every_built_in_rule_term_matches_itself() -> None:
    # a term that its own rule's qualifiers cancel could never match
    for rule in NAME_RULES:
        for term in rule.terms:
            name = f"{term} id" if rule.suffixed else term
            assert rule.matches(name), (rule.category, term)


@pytest.mark.parametrize(
    ("name", "category"),
    [
        # issue 38, item 7: as hospitals name them
        ("numero_securite_sociale", "record number"),
        ("Numéro de sécurité sociale", "record number"),
        ("numero_historia_clinica", "record number"),
        ("Número de Historia Clínica", "record number"),
        ("nro_paciente", "record number"),
        ("Versicherungsnummer", "record number"),
        ("Krankenversicherungsnummer", "record number"),
        ("Aufnahmenummer", "record number"),
        ("medicare_number", "record number"),
        ("medicaid_id", "record number"),
        ("mbi", "national id"),
        ("domicile", "address"),
    ],
)
def test_issue_38_identifier_names(name: str, category: str) -> None:
    rule = match_name(name)
    assert rule is not None and rule.category == category, name


@pytest.mark.parametrize(
    "name",
    [
        # issue 38, item 8: drug names are not person names
        "nombre_medicamento",
        "medikament_name",
        "Medikamentenname",
        "nom_medicament",
        "nome_farmaco",
        # a number word first, but no identifier after it
        "numero_de_visites",
        "num_visits",
        "nr_of_cases",
    ],
)
def test_issue_38_names_that_are_not_identifiers(name: str) -> None:
    assert match_name(name) is None, name
